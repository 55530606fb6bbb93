package fakeserver_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/internal/testbudget"
)

// TestConcurrentTransfers hammers the server with random transfers among 20
// accounts from 8 goroutines while the clock advances and some transfers
// are failed, then checks that no money was made or lost.
func TestConcurrentTransfers(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	const accounts, workers = 20, 8
	perWorker := testbudget.Pick(120, 400)
	keys := make([]string, accounts)
	handles := make([]string, accounts)
	for i := range accounts {
		handles[i] = fmt.Sprintf("@acct%02d", i)
		p := newAccount(t, srv, handles[i])
		keys[i] = p.test()
		srv.AddFunds(t, handles[i], "USDG", "100")
	}
	h := srv.Handler()
	do := func(method, path, key, body string) (int, []byte) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code, w.Body.Bytes()
	}

	var created, refused atomic.Int64
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range perWorker {
				from, to := rng.IntN(accounts), rng.IntN(accounts)
				if from == to {
					to = (to + 1) % accounts
				}
				amount := fmt.Sprintf("%d.%06d", rng.IntN(30), rng.IntN(1_000_000)+1)
				code, body := do("POST", "/v1/transfers", keys[from], `{"to":"`+handles[to]+`","amount":"`+amount+`"}`)
				switch code {
				case http.StatusCreated:
					created.Add(1)
					var tr confpay.Transfer
					if err := json.Unmarshal(body, &tr); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					ids = append(ids, tr.TransferID)
					mu.Unlock()
				case http.StatusPaymentRequired:
					refused.Add(1)
				default:
					t.Errorf("create: %d %s", code, body)
					return
				}
				if rng.IntN(50) == 0 {
					if code, body := do("GET", "/v1/transfers?limit=5", keys[from], ""); code != 200 {
						t.Errorf("list: %d %s", code, body)
					}
				}
			}
		}()
	}
	// The clock moves and transfers fail while the payments go on.
	var bg sync.WaitGroup
	bg.Add(2)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				srv.Advance(300 * time.Millisecond)
			}
		}
	}()
	go func() {
		defer bg.Done()
		rng := rand.New(rand.NewPCG(99, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			var id string
			if len(ids) > 0 {
				id = ids[rng.IntN(len(ids))]
			}
			mu.Unlock()
			if id != "" {
				_ = srv.FailTransfer(id) // an error just means it was no longer pending
			}
		}
	}()
	wg.Wait()
	close(stop)
	bg.Wait()
	srv.Settle()

	if created.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("created %d, refused %d: the test did not exercise both paths", created.Load(), refused.Load())
	}
	t.Logf("%d transfers, %d refused for want of funds", created.Load(), refused.Load())

	// Every transfer is confirmed or failed; the books match the
	// confirmed transfers; no balance is negative; the total is what was
	// funded.
	total := new(big.Int)
	want := map[string]*big.Int{}
	for _, hd := range handles {
		want[hd] = big.NewInt(100_000_000)
	}
	seen := map[string]bool{}
	statuses := map[confpay.TransferStatus]int{}
	for _, hd := range handles {
		recs, err := srv.Transfers(hd, confpay.NetworkTest)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if seen[r.TransferID] {
				continue
			}
			seen[r.TransferID] = true
			statuses[r.Status]++
			units, _ := r.Amount.Units(6)
			switch r.Status {
			case confpay.StatusConfirmed:
				want[r.From].Sub(want[r.From], units)
				want[r.To].Add(want[r.To], units)
			case confpay.StatusFailed:
			default:
				t.Fatalf("%s is %s after Settle", r.TransferID, r.Status)
			}
		}
	}
	if int64(len(seen)) != created.Load() || statuses[confpay.StatusFailed] == 0 || statuses[confpay.StatusConfirmed] == 0 {
		t.Fatalf("%d transfers recorded for %d created; statuses %v", len(seen), created.Load(), statuses)
	}
	for _, hd := range handles {
		books, _ := srv.Books(hd, confpay.NetworkTest)
		b := books[0]
		units, _ := b.Balance.Units(6)
		if b.Reserved.String() != "0" || b.Available.String() != b.Balance.String() {
			t.Fatalf("%s: reserved %s after Settle", hd, b.Reserved)
		}
		if units.Sign() < 0 {
			t.Fatalf("%s is negative", hd)
		}
		if units.Cmp(want[hd]) != 0 {
			t.Fatalf("%s holds %s, its transfers say %s", hd, units, want[hd])
		}
		total.Add(total, units)
	}
	if total.Cmp(big.NewInt(accounts*100_000_000)) != 0 {
		t.Fatalf("total %s, funded %d", total, accounts*100_000_000)
	}
}
