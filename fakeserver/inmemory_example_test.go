package fakeserver_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// A server with no listener, reached in memory: a payout goes through a 503
// and a connection reset after commit, and is made exactly once. The
// client Client returns backs off by milliseconds.
func ExampleWithoutListener() {
	srv := fakeserver.NewUnstartedServer() // in a test: fakeserver.New(t, fakeserver.WithoutListener())
	defer srv.Close()
	alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
	_ = srv.Fund("@alice", confpay.NetworkTest, "USDG", "100")
	_, _ = srv.AddFault(fakeserver.Fault{Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultError, RetryAfter: confpay.Ptr(0)})
	_, _ = srv.AddFault(fakeserver.Fault{Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultResetAfterCommit})

	client := srv.Client(alice.TestKey)
	var resp confpay.Response
	_, err := client.Transfers.Create(context.Background(),
		&confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")},
		confpay.WithIdempotencyKey("order-1"), confpay.WithResponse(&resp))
	transfers, _ := srv.Transfers("@alice", confpay.NetworkTest)
	fmt.Println(srv.URL(), err, resp.Attempts, resp.IdempotentReplayed, len(transfers))
	// Output: http://127.0.0.1:0 <nil> 3 true 1
}

// TestExampleSynctest is the synctest recipe of docs/fakeserver.md: an
// Example cannot run synctest.Test (it needs a *testing.T).
func TestExampleSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := fakeserver.New(t, fakeserver.WithoutListener())
		alice, _ := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
		_, _ = srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true})
		_ = srv.Fund("@alice", confpay.NetworkTest, "USDG", "100")
		_, _ = srv.AddFault(fakeserver.Fault{Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultError})
		_, _ = srv.AddFault(fakeserver.Fault{Path: "/v1/transfers", Times: 1, Action: fakeserver.FaultResetAfterCommit})

		// The SDK with its real backoff; the bubble's clock makes the
		// waits instant.
		client, _ := confpay.NewClient(alice.TestKey.Reveal(),
			confpay.WithBaseURL(srv.URL()), confpay.WithHTTPClient(srv.HTTPClient()))
		if _, err := client.Transfers.Create(t.Context(),
			&confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("5")},
			confpay.WithIdempotencyKey("order-1")); err != nil {
			t.Fatal(err)
		}
		if transfers, _ := srv.Transfers("@alice", confpay.NetworkTest); len(transfers) != 1 {
			t.Fatalf("%d transfers, want exactly 1", len(transfers))
		}
	})
}
