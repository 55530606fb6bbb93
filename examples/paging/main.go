// Command paging walks an account's transfers: one page at a time with
// Transfers.List, and every transfer lazily with the Transfers.All iterator,
// stopping early with break.
//
//	go run ./examples/paging
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "paging:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	srv := fakeserver.NewServer() // a virtual clock: nothing confirms until we say so
	defer srv.Close()
	alice, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@alice", GenerateEncryptionKey: true})
	if err != nil {
		return err
	}
	if _, err := srv.CreateAccount(fakeserver.AccountParams{Handle: "@bob", GenerateEncryptionKey: true}); err != nil {
		return err
	}
	if err := srv.Fund("@alice", confpay.NetworkTest, confpay.AssetUSDG, "1000"); err != nil {
		return err
	}
	client := srv.Client(alice.TestKey)

	const n = 45
	for i := 0; i < n; i++ {
		if _, err := client.Transfers.Create(ctx, &confpay.TransferCreateParams{To: "@bob", Amount: confpay.MustParseAmount("1")}); err != nil {
			return err
		}
		srv.Advance(time.Minute) // a minute between payments, on the server's clock
	}
	fmt.Fprintf(out, "made %d transfers\n", n)

	// One page at a time.
	page, err := client.Transfers.List(ctx, &confpay.TransferListParams{Limit: 20})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "first page: %d transfers, newest %s, has_more=%t\n", len(page.Transfers), page.Transfers[0].CreatedAt.Format(time.TimeOnly), page.HasMore)

	// Every transfer, fetched page by page as the loop needs them.
	count := 0
	for _, err := range client.Transfers.All(ctx, &confpay.TransferListParams{Limit: 10}) {
		if err != nil {
			return err
		}
		count++
	}
	fmt.Fprintf(out, "All walked %d transfers\n", count)

	// Filters travel with the iterator; break stops fetching.
	since := srv.Now().Add(-10 * time.Minute)
	recent := 0
	for t, err := range client.Transfers.All(ctx, &confpay.TransferListParams{From: since, Status: confpay.StatusConfirmed}) {
		if err != nil {
			return err
		}
		recent++
		if recent == 3 {
			fmt.Fprintf(out, "stopped after 3 recent confirmed transfers, the last %s\n", t.TransferID)
			break
		}
	}
	return nil
}
