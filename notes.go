package confpay

import (
	"errors"
	"fmt"

	"github.com/confpay/confpay-go/decrypt"
)

// OpenTransferNote opens a transfer's encrypted note (its amount and memo)
// with key, the private encryption key of its sender or recipient (an
// agent's payments open with the owner's key). chainID is the client's
// network, Client.ChainID. The note is bound to the transfer id, the chain
// and the readers in NoteReaders; a key that is not one of them gives an
// error wrapping decrypt.ErrNotForThisKey.
//
// The note also binds the transfer's asset (USDG when the transfer names
// none): a note opened under another asset does not open, so the asset in
// the returned note (decrypt.Note.Asset) is authenticated, whatever the
// answer's asset field says. The returned note prints redacted; read Amount
// and Memo explicitly, or use NoteAmount for an Amount in the
// authenticated asset's decimals.
func OpenTransferNote(key *decrypt.PrivateKey, chainID uint64, t *Transfer) (*decrypt.Note, error) {
	if t == nil {
		return nil, &ParamError{Param: "transfer", Problem: "is nil"}
	}
	return openNote(key, chainID, "transfer", t.TransferID, t.Asset, t.EncryptedNote, t.NoteReaders)
}

// OpenAgentTransactionNote opens the encrypted note of an agent payment
// held for approval (an item of Agents.ListPending) with the owner's private
// encryption key. See OpenTransferNote.
func OpenAgentTransactionNote(key *decrypt.PrivateKey, chainID uint64, t *AgentTransaction) (*decrypt.Note, error) {
	if t == nil {
		return nil, &ParamError{Param: "transaction", Problem: "is nil"}
	}
	return openNote(key, chainID, "transaction", t.TransactionID, t.Asset, t.EncryptedNote, t.NoteReaders)
}

func openNote(key *decrypt.PrivateKey, chainID uint64, what, reference, asset, note string, readers []string) (*decrypt.Note, error) {
	if asset == "" {
		asset = AssetUSDG
	}
	switch {
	case key == nil:
		return nil, &ParamError{Param: "key", Problem: "is nil"}
	case reference == "":
		return nil, &ParamError{Param: what + " id", Problem: "is empty"}
	case note == "":
		return nil, fmt.Errorf("confpay: %s %s has no encrypted note", what, reference)
	case len(readers) == 0:
		return nil, fmt.Errorf("confpay: %s %s lists no note readers", what, reference)
	}
	raw, err := decrypt.DecodeBase64(note)
	if err != nil {
		return nil, fmt.Errorf("confpay: encrypted_note of %s %s: %w", what, reference, err)
	}
	ctx := decrypt.NoteContext{ChainID: chainID, Reference: reference, Asset: asset}
	for i, r := range readers {
		pk, err := decrypt.ParsePublicKeyHex(r)
		if err != nil {
			return nil, fmt.Errorf("confpay: note_readers[%d] of %s %s: %w", i, what, reference, err)
		}
		ctx.Readers = append(ctx.Readers, pk)
	}
	n, err := decrypt.OpenNote(key, ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("confpay: opening the note of %s %s: %w", what, reference, err)
	}
	return n, nil
}

// NoteAmount returns an opened note's amount as an Amount, converting from
// base units with the decimals of the note's own asset (n.Asset), which
// the note authenticates: never from an unauthenticated field.
func NoteAmount(n *decrypt.Note) (Amount, error) {
	if n == nil || n.Amount == nil {
		return Amount{}, errors.New("confpay: note has no amount")
	}
	dec, ok := AssetDecimals(n.Asset)
	if !ok {
		return Amount{}, fmt.Errorf("confpay: unknown asset %q: its decimals are not known", n.Asset)
	}
	if n.Amount.Sign() < 0 {
		return Amount{}, errors.New("confpay: note amount is negative")
	}
	return AmountFromUnits(n.Amount, dec), nil
}
