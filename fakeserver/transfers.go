package fakeserver

import (
	"math/big"
	"net/http"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/ethereum/go-ethereum/common"
)

// STUB: owned by the ledger/transfers engineer, who replaces this file.

// transfer is one payment on one network.
type transfer struct {
	id           string
	from         *account
	to           *account       // nil for an external wallet
	toAddr       common.Address // the recipient's address
	toText       string         // the recipient as the payer wrote it
	asset        string
	units        *big.Int
	confidential bool
	memo         string
	status       confpay.TransferStatus
	txHash       string
	createdAt    time.Time
	confirmedAt  *time.Time
	failedAt     *time.Time
}

// transferBook holds one network's transfers.
type transferBook struct{}

func (b *transferBook) init() {}

func (s *Server) handleCreateTransfer(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleGetTransfer(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleListTransfers(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}
func (s *Server) handleBalances(c *call) (int, any, error) {
	return http.StatusNotImplemented, nil, nil
}

// payment is a request to move money: a direct transfer, an agent payment,
// or an approved held payment being submitted.
type payment struct {
	from         *account
	to           *account       // nil for an external wallet
	toAddr       common.Address // the recipient's address
	toText       string         // the recipient as the payer wrote it
	asset        string
	units        *big.Int // base units of asset, > 0
	confidential bool
	memo         string
}

// resolveRecipientLocked resolves a handle, agent handle, 0x address or
// registered domain: 404 recipient_not_found, or 400 for a bad address.
func (s *Server) resolveRecipientLocked(text string) (*account, common.Address, *apiError) {
	return nil, common.Address{}, newError(http.StatusNotImplemented, "not_implemented", "stub")
}

// availableLocked is what a can spend of asset on n now: its balance less
// its reservations.
func (s *Server) availableLocked(n *network, a *account, asset string) *big.Int {
	return new(big.Int)
}

// submitLocked checks the balance (402), reserves the amount, records the
// transfer as pending, schedules its confirmation, counts it on the key and
// emits transfer.initiated. k may be nil (approval by the owner: counted on
// the approving key is the caller's choice).
func (s *Server) submitLocked(n *network, p *payment, k *apiKey) (*transfer, *apiError) {
	return nil, newError(http.StatusNotImplemented, "not_implemented", "stub")
}
