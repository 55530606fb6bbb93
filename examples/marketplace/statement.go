package marketplace

import (
	"context"
	"slices"
	"strings"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/decrypt"
)

// Balances reads the account's balances through a decryption proof built
// with key: the service never learns the figures except from the proof.
func Balances(ctx context.Context, c *confpay.Client, key *decrypt.PrivateKey) (map[string]confpay.Amount, error) {
	list, err := c.Accounts.ReadBalances(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make(map[string]confpay.Amount, len(list))
	for _, b := range list {
		if b.Amount != nil {
			out[b.Asset] = *b.Amount
		}
	}
	return out, nil
}

// Line is one transfer of a statement. Amount and Memo come from the
// transfer's sealed note.
type Line struct {
	TransferID   string
	CreatedAt    time.Time
	Incoming     bool
	Counterparty string
	Asset        string
	Amount       confpay.Amount
	Memo         string
	Status       confpay.TransferStatus
}

// Statement is an account's transfers of one calendar month (UTC), oldest
// first, with the confirmed totals per asset.
type Statement struct {
	Month time.Time
	Lines []Line
	In    map[string]confpay.Amount
	Out   map[string]confpay.Amount
}

// MonthlyStatement lists the account's transfers created in month (any
// instant of it), pageSize at a time (0: the server's largest page), and
// opens each note with key.
func MonthlyStatement(ctx context.Context, c *confpay.Client, key *decrypt.PrivateKey, month time.Time, pageSize int) (*Statement, error) {
	me, err := c.Accounts.Me(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 1, 0)
	// Bounds are exclusive and timestamps whole milliseconds: one
	// millisecond before the first instant includes it.
	params := &confpay.TransferListParams{Limit: pageSize, From: start.Add(-time.Millisecond), To: end}
	st := &Statement{Month: start, In: map[string]confpay.Amount{}, Out: map[string]confpay.Amount{}}
	for t, err := range c.Transfers.All(ctx, params) {
		if err != nil {
			return nil, err
		}
		note, err := confpay.OpenTransferNote(key, c.ChainID(), t)
		if err != nil {
			return nil, err
		}
		amount, err := confpay.NoteAmount(note)
		if err != nil {
			return nil, err
		}
		l := Line{TransferID: t.TransferID, CreatedAt: t.CreatedAt, Incoming: !strings.EqualFold(t.From, me.Handle),
			Asset: t.Asset, Amount: amount, Memo: note.Memo, Status: t.Status}
		l.Counterparty = t.To
		if l.Incoming {
			l.Counterparty = t.From
		}
		st.Lines = append(st.Lines, l)
		if t.Status == confpay.StatusConfirmed {
			totals := st.Out
			if l.Incoming {
				totals = st.In
			}
			totals[t.Asset] = totals[t.Asset].Add(amount)
		}
	}
	slices.Reverse(st.Lines) // the service lists newest first
	return st, nil
}
