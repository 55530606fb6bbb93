package fakeserver

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestTransferIndexIsAMap checks transferIndex against the map from id to
// transfer it replaced: the same answer for every id, put in any order,
// including ids that read as the same number, that do not read as a
// number at all, and numbers far beyond the rest (as a data directory may
// hold).
func TestTransferIndexIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 5))
	seqID := func(seq uint64, width int, random string) string {
		d := strconv.FormatUint(seq, 36)
		return "tr_" + strings.Repeat("0", max(0, width-len(d))) + d + random
	}
	var ids []string
	for seq := range uint64(3000) {
		ids = append(ids, seqID(seq, 8, "abcdefghijk"+string(rune('a'+seq%26))))
	}
	ids = append(ids,
		seqID(7, 8, "zzzzzzzzzzzz"),        // the same number, another random part
		seqID(7, 9, "abcdefghijkh"),        // the same number, one more digit
		strings.ToUpper(ids[11]),           // upper case: not a number
		"tr_0000000B"+ids[11][11:],         // an upper-case digit
		seqID(1<<40, 8, "abcdefghijka"),    // far beyond the slots
		seqID(1<<63, 8, "abcdefghijka"),    // farther
		"tr_zzzzzzzzzzzzzz"+"abcdefghijka", // 14 digits: more than a uint64
		"tr_0000001abcdefghijka",           // too short to have 8 digits
		"tr_", "", "acct_00000001abcdefghijka", "tr_00000001-bcdefghijka",
	)
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	var x transferIndex
	model := map[string]*transfer{}
	probe := append(append([]string(nil), ids...), seqID(5000, 8, "abcdefghijka"), seqID(3, 8, "notstoredxyz"))
	for i, id := range ids {
		if i%2 == 0 { // every other id is put only later, some twice
			tr := &transfer{id: id}
			x.put(tr)
			model[id] = tr
		}
	}
	for i, id := range ids {
		if i%2 == 1 || i%7 == 0 {
			tr := &transfer{id: strings.Clone(id)}
			x.put(tr)
			model[id] = tr
		}
	}
	for _, id := range probe {
		if got, want := x.get(id), model[id]; got != want {
			t.Errorf("get(%q) = %p, the map says %p", id, got, want)
		}
	}
	if x.len() != len(model) {
		t.Errorf("len = %d, the map holds %d", x.len(), len(model))
	}
	seen := map[*transfer]bool{}
	for tr := range x.all {
		if seen[tr] || model[tr.id] != tr {
			t.Fatalf("all yields %q twice or a replaced transfer", tr.id)
		}
		seen[tr] = true
	}
	if len(seen) != len(model) {
		t.Errorf("all yields %d transfers, the map holds %d", len(seen), len(model))
	}
	var empty transferIndex
	if empty.get(ids[0]) != nil || empty.len() != 0 {
		t.Error("an empty index finds something")
	}
}

// TestPendingListIsASet checks pendingList against the set it replaced:
// transfers settled in any order, the list swept along the way.
func TestPendingListIsASet(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 6))
	var p pendingList
	model := map[*transfer]bool{}
	var made []*transfer
	for i := range 2000 {
		tr := &transfer{id: strconv.Itoa(i), status: statePending}
		p.add(tr)
		model[tr] = true
		made = append(made, tr)
		if rng.IntN(3) > 0 { // settle a random pending one, as confirmLocked does
			u := made[rng.IntN(len(made))]
			if u.status == statePending {
				p.settle(u)
				u.status = stateConfirmed
				delete(model, u)
			}
		}
		if i%97 == 0 {
			got := 0
			for u := range p.all {
				if !model[u] {
					t.Fatalf("all yields %s, not pending", u.id)
				}
				got++
			}
			if got != len(model) || p.len() != len(model) {
				t.Fatalf("after %d: all yields %d, len %d, pending %d", i, got, p.len(), len(model))
			}
			if len(p.ts) > 2*len(model)+64 {
				t.Fatalf("the list holds %d for %d pending", len(p.ts), len(model))
			}
		}
	}
}
