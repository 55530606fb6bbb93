package idempotency

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

func TestVerdicts(t *testing.T) {
	st := New(10)
	fp := Fingerprint("POST", "/v1/transfers", []byte(`{"a":1}`))
	e, v, _, _ := st.Begin("alice", "k1", fp, t0)
	if v != Run || e == nil {
		t.Fatalf("first use: %v", v)
	}
	if _, v, _, _ := st.Begin("alice", "k1", fp, t0); v != InUse {
		t.Fatalf("while running: %v", v)
	}
	st.Keep(e, Answer{Status: 201, Body: []byte("x")})
	if _, v, a, _ := st.Begin("alice", "k1", fp, t0.Add(time.Hour)); v != Replay || a.Status != 201 || string(a.Body) != "x" {
		t.Fatalf("replay: %v %+v", v, a)
	}
	other := Fingerprint("POST", "/v1/transfers", []byte(`{"a":2}`))
	if _, v, _, _ := st.Begin("alice", "k1", other, t0); v != Reused {
		t.Fatalf("another body: %v", v)
	}
	if _, v, _, _ := st.Begin("bob", "k1", other, t0); v != Run {
		t.Fatalf("another owner's key: %v", v)
	}
	// 24 hours later the key is new again.
	if _, v, _, _ := st.Begin("alice", "k1", other, t0.Add(TTL)); v != Run {
		t.Fatalf("after the TTL: %v", v)
	}
	// A forgotten key runs again.
	e, _, _, _ = st.Begin("alice", "k2", fp, t0)
	st.Forget(e)
	if _, v, _, _ := st.Begin("alice", "k2", fp, t0); v != Run {
		t.Fatalf("after Forget: %v", v)
	}
}

// TestLiveAfterReset: an entry begun before a Reset is no longer live,
// and keeping its answer afterwards adds nothing to the store.
func TestLiveAfterReset(t *testing.T) {
	st := New(10)
	fp := Fingerprint("POST", "/v1/transfers", nil)
	e, _, _, _ := st.Begin("alice", "k1", fp, t0)
	if !st.Live(e) {
		t.Fatal("a running entry is not live")
	}
	st.Reset()
	if st.Live(e) {
		t.Fatal("an entry begun before Reset is still live")
	}
	st.Keep(e, Answer{Status: 201})
	if n := st.Len(); n != 0 {
		t.Fatalf("%d keys after keeping a reset entry's answer, want 0", n)
	}
	if _, v, _, _ := st.Begin("alice", "k1", fp, t0); v != Run {
		t.Fatalf("the key after the reset: %v, want a new run", v)
	}
}

func TestFingerprintSeparatesParts(t *testing.T) {
	a := Fingerprint("POST", "/v1/x", []byte("ab"))
	for _, b := range [][32]byte{
		Fingerprint("POST", "/v1/xa", []byte("b")),
		Fingerprint("POST", "/v1/x?", []byte("ab")),
		Fingerprint("PATCH", "/v1/x", []byte("ab")),
	} {
		if a == b {
			t.Fatal("two different requests share a fingerprint")
		}
	}
}

func TestBoundPerOwner(t *testing.T) {
	st := New(3)
	fp := Fingerprint("POST", "/", nil)
	for i := range 3 {
		e, v, _, _ := st.Begin("alice", strconv.Itoa(i), fp, t0.Add(time.Duration(i)*time.Minute))
		if v != Run {
			t.Fatalf("key %d: %v", i, v)
		}
		st.Keep(e, Answer{Status: 201})
	}
	_, v, _, retry := st.Begin("alice", "3", fp, t0.Add(time.Hour))
	if v != Full || !retry.Equal(t0.Add(TTL)) {
		t.Fatalf("over the bound: %v, retry at %v", v, retry)
	}
	if _, v, _, _ := st.Begin("alice", "0", fp, t0.Add(time.Hour)); v != Replay {
		t.Fatalf("a held key still replays at the bound: %v", v)
	}
	if _, v, _, _ := st.Begin("bob", "0", fp, t0.Add(time.Hour)); v != Run {
		t.Fatalf("another owner is not bounded by alice's keys: %v", v)
	}
	if _, v, _, _ := st.Begin("alice", "3", fp, t0.Add(TTL)); v != Run {
		t.Fatalf("once the oldest expired: %v", v)
	}
}

// TestForgottenKeysDoNotGrowTheStore: requests whose answers are not kept
// (400s, say) leave nothing behind, however many come.
func TestForgottenKeysDoNotGrowTheStore(t *testing.T) {
	st := New(10)
	fp := Fingerprint("POST", "/", nil)
	for i := range 10_000 {
		e, _, _, _ := st.Begin("alice", strconv.Itoa(i), fp, t0)
		st.Forget(e)
	}
	if st.Len() != 0 || len(st.order) > 200 {
		t.Fatalf("%d entries, %d in the order after 10,000 forgotten keys", st.Len(), len(st.order))
	}
}

// BenchmarkStoreMemory reports the heap each kept key costs when every
// request has a 64 KiB body and a 2 KiB query: the fingerprint keeps it
// small and independent of the request's size.
func BenchmarkStoreMemory(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 64<<10)
	query := "/v1/transfers?" + string(bytes.Repeat([]byte("q"), 2<<10))
	answer := []byte(`{"transfer_id":"tr_00000001abcdefghijkl","status":"pending"}`)
	const n = 10_000
	var before, after runtime.MemStats
	for b.Loop() {
		st := New(n)
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			e, _, _, _ := st.Begin("alice", strconv.Itoa(i), Fingerprint("POST", query, body), t0)
			st.Keep(e, Answer{Status: 201, Body: answer})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-B/key")
		runtime.KeepAlive(st)
	}
}

// TestEntryKeepsLittle keeps a key's entry at its size class: one is kept
// per key for a day (BENCHMARKS.md, issue 27 item 5).
func TestEntryKeepsLittle(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit platforms")
	}
	if got := unsafe.Sizeof(Entry{}); got > 112 {
		t.Errorf("Entry is %d bytes, want at most 112", got)
	}
}

// TestKeptAnswerRoundTrip returns a kept answer as Keep was given it, a
// body or a Source, on a replay and in the records, and after Restore.
func TestKeptAnswerRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := New(10)
	fp := Fingerprint("POST", "/v1/transfers", nil)
	e1, _, _, _ := st.Begin("alice", "body", fp, t0)
	st.Keep(e1, Answer{Status: 402, Body: []byte(`{"code":"x"}`)})
	e2, _, _, _ := st.Begin("alice", "src", fp, t0)
	st.Keep(e2, Answer{Status: 201, Source: testSource(`{"id":"tr_1"}`)})
	e3, _, _, _ := st.Begin("alice", "empty", fp, t0)
	st.Keep(e3, Answer{Status: 204})
	for _, c := range []struct {
		key    string
		status int
		body   string
		src    bool
	}{{"body", 402, `{"code":"x"}`, false}, {"src", 201, `{"id":"tr_1"}`, true}, {"empty", 204, "", false}} {
		_, v, a, _ := st.Begin("alice", c.key, fp, t0)
		if v != Replay || a.Status != c.status || string(a.Bytes()) != c.body || (a.Source != nil) != c.src || (!c.src && string(a.Body) != c.body) {
			t.Errorf("%s: %v %+v", c.key, v, a)
		}
	}
	recs := st.Records()
	st2 := New(10)
	for _, r := range recs {
		st2.Restore(r)
	}
	if got := st2.Records(); len(got) != 3 || string(got[0].Body) != `{"code":"x"}` || got[1].Status != 201 || string(got[1].Body) != `{"id":"tr_1"}` || got[2].Body != nil || got[2].Status != 204 {
		t.Errorf("restored records %+v", got)
	}
}

type testSource string

func (s testSource) AnswerBody() []byte { return []byte(s) }

// TestExpireForgetsEveryExpiredKey: a key past its TTL is forgotten by
// the next Begin even when one made later, at an earlier time (the clock
// set back), is still young; with Track each key forgotten so is noted
// once, and a Reset drops the notes (it forgets every key itself).
func TestExpireForgetsEveryExpiredKey(t *testing.T) {
	st := New(10)
	st.Track()
	fp := Fingerprint("POST", "/v1/transfers", nil)
	for _, k := range []struct {
		key string
		at  time.Time
	}{{"young", t0.Add(10 * time.Hour)}, {"old", t0}} { // the clock set back between them
		e, _, _, _ := st.Begin("alice", k.key, fp, k.at)
		st.Keep(e, Answer{Status: 201, Body: []byte(k.key)})
	}
	if got := st.TakeGone(nil); len(got) != 0 {
		t.Fatalf("gone before any expiry: %v", got)
	}
	if _, v, _, _ := st.Begin("bob", "other", fp, t0.Add(TTL+time.Hour)); v != Run {
		t.Fatalf("another key: %v", v)
	}
	if got := st.TakeGone(nil); len(got) != 1 || got[0] != (Gone{Owner: "alice", Key: "old"}) {
		t.Fatalf("gone = %v, want alice's old key alone", got)
	}
	if st.Len() != 2 { // young, other
		t.Fatalf("%d keys held, want 2", st.Len())
	}
	// Back before "old" expired: it runs anew (forgotten), "young" replays.
	if _, v, _, _ := st.Begin("alice", "old", fp, t0.Add(time.Hour)); v != Run {
		t.Fatalf("the forgotten key at an earlier time: %v, want Run", v)
	}
	if _, v, _, _ := st.Begin("alice", "young", fp, t0.Add(time.Hour)); v != Replay {
		t.Fatalf("the young key: %v, want Replay", v)
	}
	if _, _, _, _ = st.Begin("bob", "later", fp, t0.Add(3*TTL)); len(st.TakeGone(nil)) == 0 {
		t.Fatal("no key noted gone at 3 TTLs")
	}
	st.Begin("bob", "x", fp, t0.Add(5*TTL))
	st.Reset()
	if got := st.TakeGone(nil); len(got) != 0 {
		t.Fatalf("gone after a reset: %v", got)
	}
}
