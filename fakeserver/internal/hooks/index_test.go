package hooks

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/confpay/confpay-go/webhookverify"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver/internal/clock"
)

// TestReplayIndexIsBuiltLazily: events are indexed by id only when a
// replay needs it, and the index agrees with the log throughout: an event
// recorded after the last replay is found, one forgotten by the bound per
// account is not (indexed or not), and compaction of the log keeps the
// index's place in it.
func TestReplayIndexIsBuiltLazily(t *testing.T) {
	c := clock.NewVirtual(boundsStart)
	h := New(Config{Clock: c, Timeout: time.Hour, Transport: hang{arrived: make(chan struct{}, 64)}, MaxEvents: 3})
	defer h.Close()
	w, err := h.Subscribe(confpay.NetworkTest, "acct_a", "https://hooks.example/", []string{"transfer.confirmed"}, "whsec_x")
	if err != nil {
		t.Fatal(err)
	}
	replay := func(id string) error {
		t.Helper()
		_, err := h.Replay(confpay.NetworkTest, "acct_a", w.WebhookID, id)
		return err
	}
	book := func() (indexed, order, index int) {
		h.mu.Lock()
		defer h.mu.Unlock()
		b := h.books[confpay.NetworkTest]
		return b.indexed, len(b.order), len(b.events)
	}
	for _, id := range []string{"evt_1", "evt_2", "evt_b1", "evt_3"} {
		if id == "evt_b1" {
			emitTo(h, c, id, "acct_b")
			continue
		}
		emitTo(h, c, id, "acct_a")
	}
	if i, _, n := book(); i != 0 || n != 0 {
		t.Fatalf("before any replay: %d indexed, %d in the index; want none", i, n)
	}
	if err := replay("evt_2"); err != nil {
		t.Fatalf("replay evt_2: %v", err)
	}
	if err := replay("evt_b1"); !errors.Is(err, ErrNoEvent) {
		t.Fatalf("replay of another account's event: %v, want ErrNoEvent", err)
	}
	if i, o, n := book(); i != 4 || o != 4 || n != 4 {
		t.Fatalf("after a replay: %d indexed of %d, %d in the index; want 4 of 4, 4", i, o, n)
	}
	// evt_4 .. evt_8: acct_a's bound forgets evt_1 .. evt_5, and the log
	// is compacted at evt_8 (more than half of it gone): of the indexed
	// prefix evt_1, evt_2, evt_b1, evt_3 only evt_b1 stays.
	for _, id := range []string{"evt_4", "evt_5", "evt_6", "evt_7", "evt_8"} {
		emitTo(h, c, id, "acct_a")
	}
	if i, o, n := book(); i != 1 || o != 4 || n != 1 {
		t.Fatalf("after compaction: %d indexed of %d in the log, %d in the index; want 1 of 4, 1", i, o, n)
	}
	for _, id := range []string{"evt_1", "evt_3", "evt_4", "evt_5"} {
		if err := replay(id); !errors.Is(err, ErrNoEvent) {
			t.Errorf("replay of forgotten %s: %v, want ErrNoEvent", id, err)
		}
	}
	for _, id := range []string{"evt_6", "evt_7", "evt_8"} {
		if err := replay(id); err != nil {
			t.Errorf("replay %s: %v", id, err)
		}
	}
	if n := h.EventCount(confpay.NetworkTest); n != 4 { // evt_b1, evt_6 .. evt_8
		t.Errorf("the log holds %d events, want 4", n)
	}
	if i, o, n := book(); i != o || n != 4 {
		t.Errorf("at the end: %d indexed of %d, %d in the index; want all, 4", i, o, n)
	}
}

// TestEventKeepsLittle guards the size BENCHMARKS.md (issue 27 item 5)
// measured: the log keeps every event, and every byte of it is heap the
// server grows into.
func TestEventKeepsLittle(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes measured on 64-bit platforms")
	}
	if got := unsafe.Sizeof(event{}); got > 96 {
		t.Errorf("an event is %d bytes, was 96", got)
	}
}

// TestInternKind shares the known kinds' strings and keeps any other kind
// as it is.
func TestInternKind(t *testing.T) {
	for _, k := range webhookverify.Kinds() {
		if p := internKind(k); *p != k || p != internKind(k) {
			t.Errorf("%s: %q, shared %v", k, *p, p == internKind(k))
		}
	}
	if p := internKind("x.unknown"); *p != "x.unknown" {
		t.Errorf("unknown kind: %q", *p)
	}
}

// TestInternKindAllocates allocates only for a kind not known.
func TestInternKindAllocates(t *testing.T) {
	k := webhookverify.KindTransferInitiated
	if n := testing.AllocsPerRun(100, func() { internEscaping(k) }); n != 0 {
		t.Errorf("a known kind: %v allocations, want 0", n)
	}
}

// internEscaping is internKind with its result escaping, as in emitLocked.
//
//go:noinline
func internEscaping(k string) *string { return internKind(k) }
