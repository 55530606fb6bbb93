package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// traced runs the example with an in-memory span recorder and returns the
// ended spans.
func traced(t testing.TB) ([]sdktrace.ReadOnlySpan, string) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var out bytes.Buffer
	if err := run(context.Background(), &out, tp); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	return rec.Ended(), out.String()
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func TestEveryAttemptIsASpan(t *testing.T) {
	spans, out := traced(t)
	if !strings.Contains(out, "is pending after 2 attempts") {
		t.Errorf("output: %s", out)
	}
	var parent sdktrace.ReadOnlySpan
	var attempts []sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch s.SpanKind() {
		case trace.SpanKindClient:
			attempts = append(attempts, s)
		case trace.SpanKindInternal:
			parent = s
		}
	}
	if parent == nil || parent.Name() != "pay @bob" {
		t.Fatalf("no parent span in %d spans", len(spans))
	}
	if len(attempts) != 2 {
		t.Fatalf("%d client spans, want 2 (the 503 and its retry)", len(attempts))
	}
	for i, want := range []struct {
		status int64
		code   codes.Code
	}{{503, codes.Error}, {201, codes.Unset}} {
		s := attempts[i]
		if got := attr(s, "http.response.status_code").AsInt64(); got != want.status {
			t.Errorf("attempt %d: status %d, want %d", i+1, got, want.status)
		}
		if s.Status().Code != want.code {
			t.Errorf("attempt %d: span status %v, want %v", i+1, s.Status().Code, want.code)
		}
		if got := attr(s, "http.request.method").AsString(); got != "POST" {
			t.Errorf("attempt %d: method %q", i+1, got)
		}
		if !strings.HasSuffix(attr(s, "url.full").AsString(), "/v1/transfers") {
			t.Errorf("attempt %d: url %q", i+1, attr(s, "url.full").AsString())
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("attempt %d is not a child of the caller's span", i+1)
		}
	}
}

func TestSpansCarryNoSecret(t *testing.T) {
	spans, _ := traced(t)
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			v := kv.Value.String()
			if strings.Contains(v, "hc_test_") || strings.Contains(v, "12.5") || strings.Contains(strings.ToLower(string(kv.Key)), "authorization") {
				t.Errorf("span %q carries %s=%s", s.Name(), kv.Key, v)
			}
		}
	}
}

// Example_tracing wraps the SDK's transport with otelhttp: one client span
// per attempt, under the caller's span.
func Example_tracing() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	if err := run(context.Background(), new(bytes.Buffer), tp); err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range rec.Ended() {
		fmt.Println(s.Name(), s.SpanKind(), attr(s, "http.response.status_code").String())
	}
	// Output:
	// HTTP POST client 503
	// HTTP POST client 201
	// pay @bob internal
}
