package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestAgentApproval(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"created agent @acme/buyer: daily 500, per payment 200, held above 50 USDG, pays only [@cloudshop]",
		"agent paid @cloudshop within its policy: tr_",
		"refused, rule per_transaction_limit",
		"agent's larger payment is held: atx_",
		`120 USDG, memo "annual plan"`,
		"owner approved atx_",
		" confirmed",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
