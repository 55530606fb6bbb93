// Command otel traces every HTTP attempt the SDK makes with OpenTelemetry,
// by wrapping the transport of the http.Client given to confpay.NewClient
// with otelhttp. The SDK itself does not depend on OpenTelemetry: this
// example is its own module, so only programs that want tracing pay for it.
//
// Each attempt is one client span, retries included: below, the fakeserver
// answers the first attempt with 503 and the SDK retries under the same
// idempotency key, so one Transfers.Create makes two spans. The spans carry
// the method, the URL's host and path, and the status; never the API key
// (otelhttp does not record the Authorization header) nor a body.
//
//	cd examples/otel && go run .
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A real program exports spans (OTLP, stdout...); this one keeps them in
	// memory and prints them at the end.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	if err := run(ctx, os.Stdout, tp); err != nil {
		fmt.Fprintln(os.Stderr, "otel:", err)
		os.Exit(1)
	}
	for _, s := range rec.Ended() {
		fmt.Printf("span %q %s %s\n", s.Name(), s.SpanKind(), s.Status().Code)
		for _, kv := range s.Attributes() {
			fmt.Printf("  %s=%s\n", kv.Key, kv.Value.String())
		}
	}
}

// tracedHTTPClient is the recipe: an http.Client whose transport opens a
// client span per request, for confpay.WithHTTPClient.
func tracedHTTPClient(tp trace.TracerProvider) *http.Client {
	return &http.Client{
		Transport: otelhttp.NewTransport(http.DefaultTransport,
			otelhttp.WithTracerProvider(tp)), // omit to use otel.GetTracerProvider()
	}
}

// run pays @bob from @alice on an embedded fakeserver through a traced
// client, with the first attempt answered 503.
func run(ctx context.Context, out io.Writer, tp trace.TracerProvider) error {
	srv := fakeserver.NewServer()
	defer srv.Close()
	alice, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		return err
	}
	if _, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true}); err != nil {
		return err
	}
	if err := srv.Fund("@alice", confpay.NetworkTest, confpay.AssetUSDG, "100"); err != nil {
		return err
	}
	srv.AddFault(fakeserver.Fault{Method: "POST", Path: "/v1/transfers", Times: 1,
		Action: fakeserver.FaultError, Status: 503, RetryAfter: confpay.Ptr(0)})

	client := srv.Client(alice.TestKey, confpay.WithHTTPClient(tracedHTTPClient(tp)))

	// A parent span of your own groups the attempts of one call.
	ctx, span := tp.Tracer("checkout").Start(ctx, "pay @bob")
	var resp confpay.Response
	t, err := client.Transfers.Create(ctx, &confpay.TransferCreateParams{
		To: "@bob", Amount: confpay.MustParseAmount("12.5"),
	}, confpay.WithResponse(&resp))
	span.End()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "paid @bob: %s is %s after %d attempts\n", t.TransferID, t.Status, resp.Attempts)
	return nil
}
