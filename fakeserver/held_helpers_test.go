package fakeserver_test

import (
	"context"
	"errors"
	"testing"

	confpay "github.com/confpay/confpay-go"
)

// cHold sends a payment that must be held for approval and returns the
// held payment of the HeldError.
func cHold(t testing.TB, c *confpay.Client, to, amount string) *confpay.AgentTransaction {
	t.Helper()
	tr, err := c.Transfers.Create(context.Background(), &confpay.TransferCreateParams{To: to, Amount: confpay.MustParseAmount(amount)})
	var held *confpay.HeldError
	if !errors.As(err, &held) || tr != nil {
		t.Fatalf("pay %s to %s = %+v, %v; want a HeldError", amount, to, tr, err)
	}
	return held.Payment
}
