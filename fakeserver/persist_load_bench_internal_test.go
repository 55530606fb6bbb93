package fakeserver

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
)

// BenchmarkLoadTransfers: what a restart pays per transfer record to keep
// the latest of each (latest.put, then live), at two sizes: the cost per
// record must not grow with the count (BENCHMARKS.md, "Fakeserver data
// directory").
func BenchmarkLoadTransfers(b *testing.B) {
	for _, n := range []int{10_000, 300_000} {
		recs := make([]transferRec, n)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range recs {
			recs[i] = transferRec{Network: confpay.NetworkTest, ID: "tr_" + strconv.Itoa(i), From: "acct_a", To: "acct_b",
				ToAddr: "0x00000000000000000000000000000000000000b0", ToText: "@bob", Asset: "USDG", Units: "10000",
				Status: confpay.StatusConfirmed, TxHash: "0xabc", CreatedAt: at, ConfirmedAt: &at}
		}
		b.Run(fmt.Sprintf("transfers=%d", n), func(b *testing.B) {
			for b.Loop() {
				var l latest[transferRec]
				for i := range recs {
					l.put(recs[i].ID, recs[i])
				}
				if len(l.live()) != n {
					b.Fatal("lost records")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}

// TestLatestChunks: latest keeps the latest record of each id in first-seen
// order across chunk boundaries, with updates and drops, as a plain
// slice and map would.
func TestLatestChunks(t *testing.T) {
	type rec struct{ id, v string }
	var l latest[rec]
	var order []string
	want := map[string]string{}
	dropped := map[string]bool{}
	put := func(id, v string) {
		if _, ok := want[id]; !ok {
			order = append(order, id)
		}
		want[id], dropped[id] = v, false
		l.put(id, rec{id, v})
	}
	n := 2*latestChunk + 100
	for i := range n {
		put(strconv.Itoa(i), "a")
	}
	for i := 0; i < n; i += 997 { // updates in every chunk
		put(strconv.Itoa(i), "b")
	}
	for i := 5; i < n; i += 1999 {
		l.drop(strconv.Itoa(i))
		dropped[strconv.Itoa(i)] = true
	}
	put("5", "c") // dropped, then put again: live, in its first place
	var wantLive []rec
	for _, id := range order {
		if !dropped[id] {
			wantLive = append(wantLive, rec{id, want[id]})
		}
	}
	if got := l.live(); !slices.Equal(got, wantLive) {
		t.Fatalf("live: %d records, want %d (first difference at %d)", len(got), len(wantLive), firstDiff(got, wantLive))
	}
	var got []rec
	for r := range l.all {
		got = append(got, *r)
	}
	if !slices.Equal(got, wantLive) {
		t.Fatalf("all: %d records, want %d (first difference at %d)", len(got), len(wantLive), firstDiff(got, wantLive))
	}
	if l.n != len(wantLive) {
		t.Fatalf("n = %d, want %d", l.n, len(wantLive))
	}
	for i, c := range l.chunks {
		if len(c) > latestChunk || (i > 0 && cap(c) != latestChunk) {
			t.Fatalf("chunk %d: len %d cap %d", i, len(c), cap(c))
		}
	}
}

func firstDiff[T comparable](a, b []T) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
