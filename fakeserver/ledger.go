package fakeserver

// STUB: owned by the ledger/transfers engineer, who replaces this file.

// ledger holds one network's balances in base units.
type ledger struct{}

func (l *ledger) init() {}
