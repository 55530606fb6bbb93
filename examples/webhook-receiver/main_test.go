package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestWebhookReceiver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"subscribed wh_",
		"verified transfer.initiated evt_",
		"verified transfer.confirmed evt_",
		"@alice sent @bob, tr_",
		"succeeded after 1 attempt(s), last answer 200",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
