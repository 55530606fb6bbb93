package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPaging(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"made 45 transfers",
		"first page: 20 transfers, newest 09:44:00, has_more=true",
		"All walked 45 transfers",
		"stopped after 3 recent confirmed transfers, the last tr_",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
