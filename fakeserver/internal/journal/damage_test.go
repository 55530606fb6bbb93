package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDamageBeforeRecordsSaved: a byte flipped inside the first record,
// ahead of four valid ones, is not a torn tail (a crash tears only the
// last flush): Open still starts from the records before it, but first
// saves the dropped bytes beside (journal.damaged, 0600) and reports how
// many complete records were among them (before: reported as a torn tail,
// nothing kept). A second damage later is saved under a fresh name.
func TestDamageBeforeRecordsSaved(t *testing.T) {
	data := encodeRecs("first", "second", "third", "fourth", "fifth")
	data[8+8+2] ^= 0x40 // inside "first"'s payload
	data = append(data, make([]byte, 1000)...)
	dir, j, c := openFile(t, data)
	wantLoaded(t, c, int64(len(encodeRecs("first", "second", "third", "fourth", "fifth"))-8), nil)
	if len(c.Damage) != 1 {
		t.Fatalf("damage %+v: four complete records followed the bad one", c.Damage)
	}
	d := c.Damage[0]
	if d.File != JournalFile || d.Offset != 8 || d.Records != 4 || d.Saved != filepath.Join(dir, DamagedFile) {
		t.Fatalf("damage %+v, want journal at byte 8, 4 records, saved as %s", d, DamagedFile)
	}
	saved, err := os.ReadFile(d.Saved)
	if err != nil {
		t.Fatal(err)
	}
	if want := data[8 : 8+c.Dropped]; !bytes.Equal(saved, want) {
		t.Fatalf("saved %q, want the dropped bytes %q", saved, want)
	}
	if st, err := os.Stat(d.Saved); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the saved file: %v, mode %v", err, st.Mode().Perm())
	}
	j.Close()

	// The same damage again (a process stopped between the save and the
	// cut): the earlier copy is reused, no second one made.
	if err := os.WriteFile(filepath.Join(dir, JournalFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	j2, c2, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	j2.Close()
	if len(c2.Damage) != 1 || c2.Damage[0].Saved != d.Saved || !c2.Damage[0].Reused {
		t.Fatalf("the same damage again: %+v, want %s reused", c2.Damage, DamagedFile)
	}
	wantDamagedFiles(t, dir, DamagedFile)

	// Other damage: an earlier saved copy is never overwritten.
	data[8+8+2] ^= 0x40
	data[len(encodeRecs("first"))+8+1] ^= 0x40 // inside "second"'s payload
	if err := os.WriteFile(filepath.Join(dir, JournalFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	j3, c3, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j3.Close()
	if len(c3.Damage) != 1 || c3.Damage[0].Saved != filepath.Join(dir, DamagedFile+".1") || c3.Damage[0].Reused {
		t.Fatalf("other damage: %+v, want it saved as %s.1", c3.Damage, DamagedFile)
	}
	if again, err := os.ReadFile(filepath.Join(dir, DamagedFile)); err != nil || !bytes.Equal(again, saved) {
		t.Fatalf("the first saved copy changed: %v", err)
	}
	wantDamagedFiles(t, dir, DamagedFile, DamagedFile+".1")
}

// wantDamagedFiles fails unless the journal.damaged* files in dir are
// names (sorted).
func wantDamagedFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	got, err := filepath.Glob(filepath.Join(dir, DamagedFile+"*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if !slices.Equal(got, names) {
		t.Fatalf("saved copies %q, want %q", got, names)
	}
}

// TestDamageOlderJournalSavedOnce: damage in the older of two journals
// (journal, then journal.next: a rewrite a crash interrupted) is not cut
// at Open but folded away by the rewrite at start; a process stopped
// before that fold finds the same damage at the next Open, which reuses
// the copy saved the first time (before: a second copy, journal.damaged.1).
func TestDamageOlderJournalSavedOnce(t *testing.T) {
	dir := t.TempDir()
	data := encodeRecs("first", "second", "third")
	data[8+8+2] ^= 0x40
	if err := os.WriteFile(filepath.Join(dir, JournalFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	next := encodeRecs()
	next[4] = 1 // the next generation
	if err := os.WriteFile(filepath.Join(dir, NextFile), next, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		j, c, err := Open(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		j.Close() // stopped before the fold
		if len(c.Damage) != 1 || c.Damage[0].Records != 2 || c.Damage[0].Reused != (i == 1) || c.Damage[0].Saved != filepath.Join(dir, DamagedFile) {
			t.Fatalf("open %d: damage %+v", i+1, c.Damage)
		}
	}
	wantDamagedFiles(t, dir, DamagedFile)
}

// TestDamageSavedAtomically: the copy is written under a temporary name
// and renamed once whole, so a kill -9 mid-save leaves that name alone;
// Open removes it and saves again under the final name.
func TestDamageSavedAtomically(t *testing.T) {
	dir := t.TempDir()
	data := encodeRecs("first", "second", "third")
	data[8+8+2] ^= 0x40
	if err := os.WriteFile(filepath.Join(dir, JournalFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, DamagedFile+".tmp"), data[8:20], 0o600); err != nil {
		t.Fatal(err) // a copy a kill -9 interrupted
	}
	j, c, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if len(c.Damage) != 1 || c.Damage[0].Reused {
		t.Fatalf("damage %+v", c.Damage)
	}
	wantDamagedFiles(t, dir, DamagedFile)
	if saved, err := os.ReadFile(c.Damage[0].Saved); err != nil || !bytes.Equal(saved, data[8:]) {
		t.Fatalf("saved %q (%v), want %q", saved, err, data[8:])
	}
	// A leftover with no damage to save (the journal was cut): removed.
	if err := os.WriteFile(filepath.Join(dir, DamagedFile+".tmp"), data[8:20], 0o600); err != nil {
		t.Fatal(err)
	}
	j, c, err = Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if len(c.Damage) != 0 {
		t.Fatalf("damage %+v after the cut", c.Damage)
	}
	wantDamagedFiles(t, dir, DamagedFile)
}

// TestDamagedLengthResyncs: a record whose length field is damaged (its
// extent unknown) is still followed by records the scan finds.
func TestDamagedLengthResyncs(t *testing.T) {
	data := encodeRecs("one", "two", "three", "four")
	good := len(encodeRecs("one"))
	data[good] = 0xff // "two"'s length: past the file
	_, _, c := openFile(t, data)
	if len(c.Damage) != 1 || c.Damage[0].Records != 2 || c.Damage[0].Offset != int64(good) {
		t.Fatalf("damage %+v, want 2 records after byte %d", c.Damage, good)
	}
	if got := strs(c.Journal); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("loaded %q", got)
	}
}

// TestTornTailNoDamage: a torn tail (no complete record after the bad
// one, zeros after it or not) is no damage: nothing saved.
func TestTornTailNoDamage(t *testing.T) {
	for _, data := range [][]byte{
		slices.Concat(encodeRecs("one", "two"), tornRecord(), make([]byte, 5000)),
		slices.Concat(encodeRecs("one", "two"), tornRecord()),
		slices.Concat(encodeRecs("one", "two"), encodeRecs("three")[8:14]),
	} {
		dir, _, c := openFile(t, data)
		if len(c.Damage) != 0 || c.Dropped == 0 {
			t.Fatalf("damage %+v, dropped %d: want a torn tail", c.Damage, c.Dropped)
		}
		if _, err := os.Stat(filepath.Join(dir, DamagedFile)); !os.IsNotExist(err) {
			t.Fatalf("a torn tail was saved: %v", err)
		}
	}
}

// TestLegacyZerosCountDropped: zeros cut after a version 3 journal's
// records (no zeros were ever written there: the rest of a torn write)
// count in Dropped.
func TestLegacyZerosCountDropped(t *testing.T) {
	data := encodeRecs("one")
	data[3] = 3
	data = append(data, 0, 0, 0) // less than a record's header
	_, _, c := openFile(t, data)
	wantLoaded(t, c, 3, []string{"one"})
}

// TestDamageLastRecordEndsInZeros: the last record after the bad one has
// a payload ending in zero bytes, which look like the preallocated zeros
// after a journal's records. It is still counted, saved whole and
// reported (before: the scan stopped at the last non-zero byte, so such
// a record was cut off: with it alone after the bad one, no Damage was
// reported and the complete record was dropped as a torn tail; with two,
// one was counted and the copy lacked its last byte).
func TestDamageLastRecordEndsInZeros(t *testing.T) {
	for _, tc := range []struct {
		recs    []string
		records int
	}{
		{[]string{"first", "second\x00\x00"}, 1},
		{[]string{"first", "second", "third\x00"}, 2},
	} {
		full := encodeRecs(tc.recs...)
		data := slices.Clone(full)
		data[8+8+2] ^= 0x40 // inside "first"'s payload
		data = append(data, make([]byte, 1000)...)
		_, _, c := openFile(t, data)
		if len(c.Damage) != 1 || c.Damage[0].Records != tc.records || c.Damage[0].Bytes != int64(len(full)-8) {
			t.Fatalf("%q: damage %+v, want %d records in %d bytes", tc.recs, c.Damage, tc.records, len(full)-8)
		}
		if c.Dropped != int64(len(full)-8) {
			t.Fatalf("%q: dropped %d, want %d", tc.recs, c.Dropped, len(full)-8)
		}
		saved, err := os.ReadFile(c.Damage[0].Saved)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(saved, data[8:len(full)]) {
			t.Fatalf("%q: saved %q, want %q", tc.recs, saved, data[8:len(full)])
		}
	}
}

// TestDamageBudgetNoneFound: bytes after the bad record that spend the
// scan's budget (a length of 4 KiB at every fourth byte, no checksum
// matching) with no complete record found are a torn tail: no Damage,
// nothing saved (before: reported as damage of "at least 0" records).
func TestDamageBudgetNoneFound(t *testing.T) {
	junk := make([]byte, 1<<20)
	for i := 0; i+4 <= len(junk); i += 4 {
		junk[i+1] = 0x10 // 4096, little-endian
	}
	if n, _, partial := recordsIn(junk); n != 0 || !partial {
		t.Fatalf("recordsIn: %d records, partial %v: want the budget spent with none found", n, partial)
	}
	dir, _, c := openFile(t, slices.Concat(encodeRecs("one"), junk))
	if len(c.Damage) != 0 || c.Dropped == 0 {
		t.Fatalf("damage %+v, dropped %d: want a torn tail", c.Damage, c.Dropped)
	}
	if _, err := os.Stat(filepath.Join(dir, DamagedFile)); !os.IsNotExist(err) {
		t.Fatalf("a torn tail was saved: %v", err)
	}
}
