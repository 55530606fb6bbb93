package confpay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// pagedServer serves GET /v1/transfers over a list it holds, newest first,
// honouring limit and offset. fail, when set, answers page n (from 0) with a
// 500; onPage runs before each page is answered.
type pagedServer struct {
	mu     sync.Mutex
	items  []*Transfer
	pages  int
	status []string
	fail   int
	onPage func(n int)
}

func (s *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	n := s.pages
	s.pages++
	s.status = append(s.status, r.URL.Query().Get("status"))
	hook := s.onPage
	s.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	if s.fail > 0 && n == s.fail {
		writeJSON(w, 400, []byte(`{"code":"invalid_request","message":"bad page"}`))
		return
	}
	q := r.URL.Query()
	limit, offset := 20, 0
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	if v := q.Get("offset"); v != "" {
		offset, _ = strconv.Atoi(v)
	}
	s.mu.Lock()
	end := min(offset+limit, len(s.items))
	page := TransferList{Transfers: s.items[min(offset, end):end], HasMore: end < len(s.items)}
	body, _ := json.Marshal(page)
	s.mu.Unlock()
	writeJSON(w, 200, body)
}

func (s *pagedServer) pageCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pages
}

func (s *pagedServer) prepend(id string) {
	s.mu.Lock()
	s.items = append([]*Transfer{{TransferID: id, Status: StatusPending, To: "@bob"}}, s.items...)
	s.mu.Unlock()
}

func newPagedServer(n int) *pagedServer {
	s := &pagedServer{}
	for i := n - 1; i >= 0; i-- {
		s.items = append(s.items, &Transfer{TransferID: fmt.Sprintf("tr_%04d", i), Status: StatusConfirmed, To: "@bob"})
	}
	return s
}

func TestAllWalksEveryPage(t *testing.T) {
	srv := newPagedServer(250)
	c := newTestClient(t, srv.ServeHTTP)
	var ids []string
	for tr, err := range c.Transfers.All(context.Background(), &TransferListParams{Status: StatusConfirmed}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tr.TransferID)
	}
	if len(ids) != 250 || ids[0] != "tr_0249" || ids[249] != "tr_0000" {
		t.Fatalf("got %d transfers (%v ... )", len(ids), ids[:min(3, len(ids))])
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] >= ids[i-1] {
			t.Fatalf("out of order at %d: %s after %s", i, ids[i], ids[i-1])
		}
	}
	if srv.pageCount() != 3 {
		t.Errorf("%d pages fetched, want 3 of 100", srv.pageCount())
	}
	srv.mu.Lock()
	statuses := srv.status
	srv.mu.Unlock()
	for _, s := range statuses {
		if s != "confirmed" {
			t.Errorf("a page was asked with status %q", s)
		}
	}
}

func TestAllIsLazyAndStopsOnBreak(t *testing.T) {
	srv := newPagedServer(250)
	c := newTestClient(t, srv.ServeHTTP)
	seq := c.Transfers.All(context.Background(), &TransferListParams{Limit: 10})
	if srv.pageCount() != 0 {
		t.Fatal("All fetched before the loop started")
	}
	n := 0
	for _, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 15 {
			break
		}
	}
	if srv.pageCount() != 2 {
		t.Errorf("%d pages fetched for 15 items of 10 a page, want 2", srv.pageCount())
	}
}

func TestAllStopsOnError(t *testing.T) {
	srv := newPagedServer(250)
	srv.fail = 1
	c := newTestClient(t, srv.ServeHTTP)
	n, errs := 0, 0
	for tr, err := range c.Transfers.All(context.Background(), nil) {
		if err != nil {
			errs++
			if !errors.Is(err, ErrInvalidRequest) || tr != nil {
				t.Errorf("yielded %v, %v", tr, err)
			}
			continue
		}
		n++
	}
	if n != 100 || errs != 1 || srv.pageCount() != 2 {
		t.Errorf("%d items, %d errors, %d pages; want 100, 1, 2", n, errs, srv.pageCount())
	}

	// A refused parameter is yielded as the only value.
	for _, err := range c.Transfers.All(context.Background(), &TransferListParams{Offset: -1}) {
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "offset" {
			t.Errorf("error %v, want the offset refused", err)
		}
	}
}

// TestAllSkipsShiftedRepeats inserts new transfers at the head between
// pages: the walk must not yield a transfer twice.
func TestAllSkipsShiftedRepeats(t *testing.T) {
	srv := newPagedServer(30)
	srv.onPage = func(n int) {
		if n == 1 {
			srv.prepend("tr_new1")
			srv.prepend("tr_new2")
		}
	}
	c := newTestClient(t, srv.ServeHTTP)
	seen := map[string]int{}
	for tr, err := range c.Transfers.All(context.Background(), &TransferListParams{Limit: 10}) {
		if err != nil {
			t.Fatal(err)
		}
		seen[tr.TransferID]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s yielded %d times", id, n)
		}
	}
	for i := range 30 {
		if id := fmt.Sprintf("tr_%04d", i); seen[id] != 1 {
			t.Errorf("%s missing", id)
		}
	}
}

func TestListPage(t *testing.T) {
	srv := newPagedServer(5)
	c := newTestClient(t, srv.ServeHTTP)
	page, err := c.Transfers.List(context.Background(), &TransferListParams{Limit: 2, Offset: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Transfers) != 2 || !page.HasMore || page.Transfers[0].TransferID != "tr_0002" {
		t.Errorf("page %+v", page)
	}
	page, err = c.Transfers.List(context.Background(), &TransferListParams{Limit: 2, Offset: 4})
	if err != nil || len(page.Transfers) != 1 || page.HasMore {
		t.Errorf("last page %+v, %v", page, err)
	}
}
