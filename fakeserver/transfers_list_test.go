package fakeserver_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
)

// listIDs lists over raw HTTP and returns the ids and has_more.
func listIDs(t *testing.T, srv *fakeserver.Server, key string, q url.Values) ([]string, bool) {
	t.Helper()
	a := rawCall(t, srv, "GET", "/v1/transfers?"+q.Encode(), key, "")
	if a.status != 200 {
		t.Fatalf("list %s: %d %s", q.Encode(), a.status, a.body)
	}
	var l confpay.TransferList
	a.decode(t, &l)
	if l.Transfers == nil {
		t.Fatalf("list %s: transfers is null, want []", q.Encode())
	}
	ids := make([]string, len(l.Transfers))
	for i, tr := range l.Transfers {
		ids[i] = tr.TransferID
	}
	return ids, l.HasMore
}

func TestListPaginationOrderingAndFilters(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	bob := newAccount(t, srv, "@bob")
	newAccount(t, srv, "@carol")
	srv.AddFunds(t, "@alice", "USDG", "1000")
	srv.AddFunds(t, "@bob", "USDG", "1000")
	ac := newClient(t, srv, alice.test(), nil)
	bc := newClient(t, srv, bob.test(), nil)
	t0 := srv.Now()

	// 130 transfers touching alice: 105 sent by her, 25 received from bob,
	// several per instant, plus some that do not touch her at all.
	var want []string // newest first
	var stamps []time.Time
	for i := range 130 {
		var tr *confpay.Transfer
		if i%5 == 4 {
			tr = send(t, bc, "@alice", "1")
		} else {
			tr = send(t, ac, "@bob", "1")
		}
		if i%7 == 0 {
			send(t, bc, "@carol", "1")
		}
		want = append([]string{tr.TransferID}, want...)
		stamps = append([]time.Time{tr.CreatedAt}, stamps...)
		if i%3 == 2 {
			srv.Advance(400 * time.Millisecond) // confirms some, not others
		}
	}
	if got, more := listIDs(t, srv, alice.test(), nil); len(got) != 20 || !more || fmt.Sprint(got) != fmt.Sprint(want[:20]) {
		t.Fatalf("default page: %d items, more %v", len(got), more)
	}
	for _, c := range []struct {
		limit, offset, n int
		more             bool
	}{
		{1, 0, 1, true}, {100, 0, 100, true}, {100, 100, 30, false}, {100, 30, 100, false},
		{7, 126, 4, false}, {50, 129, 1, false}, {10, 130, 0, false}, {10, 1000, 0, false}, {30, 100, 30, false}, {29, 100, 29, true},
	} {
		q := url.Values{"limit": {fmt.Sprint(c.limit)}, "offset": {fmt.Sprint(c.offset)}}
		got, more := listIDs(t, srv, alice.test(), q)
		if len(got) != c.n || more != c.more {
			t.Fatalf("limit %d offset %d: %d items, more %v; want %d, %v", c.limit, c.offset, len(got), more, c.n, c.more)
		}
		if c.n > 0 && fmt.Sprint(got) != fmt.Sprint(want[c.offset:c.offset+c.n]) {
			t.Fatalf("limit %d offset %d: wrong items or order", c.limit, c.offset)
		}
	}
	// Invalid limits and offsets.
	for _, q := range []string{"limit=0", "limit=101", "limit=-1", "limit=abc", "limit=1.5", "limit=", "limit=+5", "offset=-1", "offset=x", "offset=99999999999999999999", "limit=1&limit=2", "status=held", "from=yesterday", "to=2026-13-01T00:00:00Z", "sort=asc"} {
		a := rawCall(t, srv, "GET", "/v1/transfers?"+q, alice.test(), "")
		if a.status != 400 || a.err().Code != confpay.CodeInvalidRequest || a.err().Param == "" {
			t.Fatalf("%s: %d %s", q, a.status, a.body)
		}
	}

	// Status filter against the records.
	recs, _ := srv.Transfers("@alice", confpay.NetworkTest)
	for _, st := range []confpay.TransferStatus{confpay.StatusPending, confpay.StatusConfirmed} {
		var wantSt []string
		for _, r := range recs {
			if r.Status == st {
				wantSt = append(wantSt, r.TransferID)
			}
		}
		if len(wantSt) == 0 {
			t.Fatalf("no %s transfers to test with", st)
		}
		got, more := listIDs(t, srv, alice.test(), url.Values{"status": {string(st)}, "limit": {"100"}})
		if fmt.Sprint(got) != fmt.Sprint(wantSt[:min(100, len(wantSt))]) || more != (len(wantSt) > 100) {
			t.Fatalf("status %s: %d items, want %d", st, len(got), len(wantSt))
		}
		got, more = listIDs(t, srv, alice.test(), url.Values{"status": {string(st)}, "limit": {"3"}, "offset": {"2"}})
		if fmt.Sprint(got) != fmt.Sprint(wantSt[2:5]) || !more {
			t.Fatalf("status %s page: %v", st, got)
		}
	}
	if got, _ := listIDs(t, srv, alice.test(), url.Values{"status": {"failed"}}); len(got) != 0 {
		t.Fatalf("failed: %v", got)
	}

	// from/to are exclusive bounds on created_at.
	mid := stamps[60]
	var after, before []string
	for i, st := range stamps {
		if st.After(mid) {
			after = append(after, want[i])
		}
		if st.Before(mid) {
			before = append(before, want[i])
		}
	}
	got, _ := listIDs(t, srv, alice.test(), url.Values{"from": {mid.Format(time.RFC3339Nano)}, "limit": {"100"}})
	if fmt.Sprint(got) != fmt.Sprint(after[:min(100, len(after))]) {
		t.Fatalf("from: %d items, want %d", len(got), len(after))
	}
	got, _ = listIDs(t, srv, alice.test(), url.Values{"to": {mid.Format(time.RFC3339Nano)}, "limit": {"100"}})
	if fmt.Sprint(got) != fmt.Sprint(before[:min(100, len(before))]) {
		t.Fatalf("to: %d items, want %d", len(got), len(before))
	}
	got, _ = listIDs(t, srv, alice.test(), url.Values{"from": {mid.Format(time.RFC3339)}, "to": {mid.Format(time.RFC3339)}})
	if len(got) != 0 {
		t.Fatalf("from = to: %d items", len(got))
	}
	got, _ = listIDs(t, srv, alice.test(), url.Values{"from": {t0.Add(-time.Hour).Format(time.RFC3339)}, "to": {srv.Now().Add(time.Hour).Format(time.RFC3339)}, "limit": {"100"}, "offset": {"100"}})
	if fmt.Sprint(got) != fmt.Sprint(want[100:]) {
		t.Fatalf("wide bounds: %d items", len(got))
	}

	// A date alone is midnight UTC of that day.
	day := t0.UTC().Format(time.DateOnly)
	got, _ = listIDs(t, srv, alice.test(), url.Values{"from": {day}, "limit": {"100"}})
	if fmt.Sprint(got) != fmt.Sprint(want[:100]) {
		t.Fatalf("from=%s: %d items, want the first 100", day, len(got))
	}
	if got, _ = listIDs(t, srv, alice.test(), url.Values{"to": {day}}); len(got) != 0 {
		t.Fatalf("to=%s: %d items, want none", day, len(got))
	}
	next := t0.UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	if got, _ = listIDs(t, srv, alice.test(), url.Values{"from": {next}}); len(got) != 0 {
		t.Fatalf("from=%s: %d items, want none", next, len(got))
	}

	// The SDK's All iterator walks everything exactly once.
	n := 0
	for tr, err := range ac.Transfers.All(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tr.TransferID != want[n] {
			t.Fatalf("All item %d out of order", n)
		}
		n++
	}
	if n != 130 {
		t.Fatalf("All walked %d", n)
	}
	// Bob sees the transfers he sent to carol too, and alice's ones.
	if got, _ := listIDs(t, srv, bob.test(), url.Values{"limit": {"100"}, "offset": {"100"}}); len(got) != 130+19-100 {
		t.Fatalf("bob: %d on the second page", len(got))
	}
}

func TestListOrderWithClockSetBack(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t)
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")
	c := newClient(t, srv, alice.test(), nil)
	late := send(t, c, "@bob", "1")
	srv.Set(srv.Now().Add(-time.Hour))
	early := send(t, c, "@bob", "1")
	srv.Advance(30 * time.Minute)
	middle := send(t, c, "@bob", "1")
	got, _ := listIDs(t, srv, alice.test(), nil)
	if fmt.Sprint(got) != fmt.Sprint([]string{late.TransferID, middle.TransferID, early.TransferID}) {
		t.Fatalf("order %v", got)
	}
}

// TestTimestampsFeedBackAsBounds: on the real clock, every instant the
// server answers is whole milliseconds, so a created_at fed back as an
// exclusive bound means exactly that instant.
func TestTimestampsFeedBackAsBounds(t *testing.T) {
	t.Parallel()
	srv := fakeserver.New(t, fakeserver.WithRealClock())
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	srv.AddFunds(t, "@alice", "USDG", "10")
	a := rawCall(t, srv, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"1"}`)
	if a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	var raw struct {
		TransferID string `json:"transfer_id"`
		CreatedAt  string `json:"created_at"`
	}
	a.decode(t, &raw)
	at, err := time.Parse(time.RFC3339Nano, raw.CreatedAt)
	if err != nil {
		t.Fatal(err)
	}
	if at.Nanosecond()%int(time.Millisecond) != 0 {
		t.Fatalf("created_at %s has more than millisecond precision", raw.CreatedAt)
	}
	for _, q := range []url.Values{{"from": {raw.CreatedAt}}, {"to": {raw.CreatedAt}}} {
		if got, _ := listIDs(t, srv, alice.test(), q); len(got) != 0 {
			t.Errorf("list %s: %v, want nothing (the bounds are exclusive)", q.Encode(), got)
		}
	}
	before := at.Add(-time.Millisecond).Format(time.RFC3339Nano)
	if got, _ := listIDs(t, srv, alice.test(), url.Values{"from": {before}}); len(got) != 1 || got[0] != raw.TransferID {
		t.Errorf("list from %s: %v, want the transfer", before, got)
	}
}
