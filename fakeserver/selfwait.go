package fakeserver

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/confpay/confpay-go/fakeserver/internal/clock"
)

// A delivery never waits on itself (issue 16 item 5): an in-process
// receiver (SubscribeHandler, Record) that calls Sync, Advance or Set from
// inside its own delivery would hold the call until the delivery's limit,
// since the delivery cannot end before the handler answers. The delivery
// transport hands the handler's wrapper the clock work the attempt is
// tracked as, and the wrapper marks the handler's goroutine as inside it
// (clock.Work.Inside): the handler's clock calls then neither wait for
// its delivery nor let any other call wait for it.

// deliveryWorkHeader carries the token of the attempt's work from the
// delivery transport to an in-process receiver's wrapper, which removes
// it before the handler sees the request. Only in-process receivers get
// it: it never leaves the process.
const deliveryWorkHeader = "X-Fakeserver-Delivery-Work"

// workTokens names the work of the in-process deliveries in flight.
type workTokens struct {
	mu   sync.Mutex
	seq  uint64
	byID map[string]*clock.Work
}

// mark returns req carrying the token of the work its context names (a
// copy, if there is one) and the function that forgets the token.
func (wt *workTokens) mark(req *http.Request) (*http.Request, func()) {
	w := clock.WorkFrom(req.Context())
	if w == nil {
		return req, func() {}
	}
	wt.mu.Lock()
	if wt.byID == nil {
		wt.byID = map[string]*clock.Work{}
	}
	wt.seq++
	tok := strconv.FormatUint(wt.seq, 10)
	wt.byID[tok] = w
	wt.mu.Unlock()
	req = req.Clone(req.Context())
	req.Header.Set(deliveryWorkHeader, tok)
	return req, func() {
		wt.mu.Lock()
		delete(wt.byID, tok)
		wt.mu.Unlock()
	}
}

// wrap returns h run inside the work of the delivery it serves.
func (wt *workTokens) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if tok := r.Header.Get(deliveryWorkHeader); tok != "" {
			r.Header.Del(deliveryWorkHeader)
			wt.mu.Lock()
			w := wt.byID[tok]
			wt.mu.Unlock()
			if w != nil {
				defer w.Inside()()
			}
		}
		h.ServeHTTP(rw, r)
	})
}
