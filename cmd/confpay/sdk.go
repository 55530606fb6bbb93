package main

// This file is the seam between the commands and the parts of the SDK
// whose shape is still moving (held payments, listing agents, note opening,
// optional fields): a change there is adapted here, once.

import (
	"context"
	"errors"
	"strings"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// opened is a note's content once opened: the amount and the memo.
type opened struct {
	Amount *confpay.Amount `json:"amount,omitempty"`
	Memo   *string         `json:"memo,omitempty"`
}

// openedTransfer is a transfer with its note opened: the SDK's wire type,
// plus amount and memo when the key could read them.
type openedTransfer struct {
	*confpay.Transfer
	opened
}

// openedTransaction is a held agent payment with its note opened.
type openedTransaction struct {
	*confpay.AgentTransaction
	opened
}

// openTransfer opens a transfer's note with key. No key, or no note, is not
// an error: the result is then empty.
func openTransfer(c *confpay.Client, key *decrypt.PrivateKey, t *confpay.Transfer) (opened, error) {
	if key == nil || t.EncryptedNote == "" {
		return opened{}, nil
	}
	n, err := confpay.OpenTransferNote(key, c.ChainID(), t)
	if err != nil {
		return opened{}, err
	}
	return noteContent(n)
}

// openTransaction opens a held agent payment's note (sealed to the owner).
func openTransaction(c *confpay.Client, key *decrypt.PrivateKey, t *confpay.AgentTransaction) (opened, error) {
	if key == nil || t.EncryptedNote == "" {
		return opened{}, nil
	}
	n, err := confpay.OpenAgentTransactionNote(key, c.ChainID(), t)
	if err != nil {
		return opened{}, err
	}
	return noteContent(n)
}

// noteContent reads an opened note in the decimals of the asset it
// authenticates.
func noteContent(n *decrypt.Note) (opened, error) {
	amt, err := confpay.NoteAmount(n)
	if err != nil {
		return opened{}, err
	}
	memo := n.Memo
	return opened{Amount: &amt, Memo: &memo}, nil
}

// listAgents lists the caller's agents.
func listAgents(ctx context.Context, c *confpay.Client) ([]*confpay.Agent, error) {
	return c.Agents.List(ctx)
}

// createTransfer sends a payment: the submitted transfer, or the payment
// held for the owner's approval (an agent's, above its threshold).
func createTransfer(ctx context.Context, c *confpay.Client, p *confpay.TransferCreateParams, opts ...confpay.CallOption) (*confpay.Transfer, *confpay.AgentTransaction, error) {
	t, err := c.Transfers.Create(ctx, p, opts...)
	var held *confpay.HeldError
	if errors.As(err, &held) {
		return nil, held.Payment, nil
	}
	return t, nil, err
}

// eventKinds types event kind names as given on the command line.
func eventKinds(names []string) []confpay.EventKind {
	out := make([]confpay.EventKind, len(names))
	for i, n := range names {
		out[i] = confpay.EventKind(n)
	}
	return out
}

// joinKinds joins event kinds with sep.
func joinKinds(kinds []confpay.EventKind, sep string) string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, sep)
}

// publicPayment is the Confidential field of a public payment.
func publicPayment() *bool { return confpay.Ptr(false) }

// assetOrDefault is the asset a transfer is in (USDG when not said).
func assetOrDefault(asset string) string {
	if asset == "" {
		return confpay.AssetUSDG
	}
	return strings.ToUpper(asset)
}
