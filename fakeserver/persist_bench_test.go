package fakeserver_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	confpay "github.com/confpay/confpay-go"
	"github.com/confpay/confpay-go/fakeserver"
	"github.com/confpay/confpay-go/fakeserver/internal/journal"
)

// BenchmarkTransferCreateDataDir: POST /v1/transfers through the handler,
// 8, 64, 256 and 1024 clients in parallel, without a data directory, with one
// (fsync), and with one without fsync, each without and with an
// Idempotency-Key (a fresh one per request, as the SDK sends), in the
// same run; -count N alternates the modes round by round
// (BENCHMARKS.md). cpu-ns/op is the process's CPU time per transfer
// (client side included), steadier than ns/op on a shared machine;
// transfers/flush how many transfers a group commit (one fsync) carried.
func BenchmarkTransferCreateDataDir(b *testing.B) {
	for _, clients := range []int{8, 64, 256, 1024} {
		for _, key := range []bool{false, true} {
			for _, mode := range []string{"memory", "data", "data-nosync"} {
				name := fmt.Sprintf("clients=%d/%s", clients, mode)
				if key {
					name += "/key"
				}
				b.Run(name, func(b *testing.B) { benchCreateDataDir(b, clients, mode, key) })
			}
		}
	}
}

func benchCreateDataDir(b *testing.B, clients int, mode string, key bool) {
	// A fresh Idempotency-Key per request: past the default bound (100,000
	// per account and network) a long run (-benchtime 2s) would answer 429.
	opts := []fakeserver.Option{fakeserver.WithoutListener(), fakeserver.WithBlockTime(time.Hour),
		fakeserver.WithMaxIdempotencyKeys(1 << 30)}
	dir := b.TempDir()
	switch mode {
	case "data":
		opts = append(opts, fakeserver.WithDataDir(dir))
	case "data-nosync":
		opts = append(opts, fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync())
	}
	srv := fakeserver.New(b, opts...)
	alice := newAccount(b, srv, "@alice")
	newAccount(b, srv, "@bob")
	fundOn(b, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000000000")
	h := srv.Handler()
	b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0))) // × GOMAXPROCS goroutines
	var n atomic.Int64
	var flushes0 uint64
	if mode != "memory" {
		flushes0 = fakeserver.JournalFlushes(srv)
	}
	b.ResetTimer()
	cpu0, cpuOK := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var hdr []string
			if key {
				hdr = []string{"Idempotency-Key", "bench-" + strconv.FormatInt(n.Add(1), 10)}
			}
			if a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`, hdr...); a.status != 201 {
				b.Errorf("status %d", a.status)
				return
			}
		}
	})
	b.StopTimer()
	if cpu1, ok := processCPU(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	if mode != "memory" {
		if f := fakeserver.JournalFlushes(srv) - flushes0; f > 0 {
			b.ReportMetric(float64(b.N)/float64(f), "transfers/flush")
		}
		srv.Close()
		if n, err := journalSize(dir); err == nil {
			b.ReportMetric(float64(n)/float64(b.N), "journal-B/transfer")
		}
	}
}

// TestDataDirRestartTime measures a restart with many transfers stored
// (CONFPAY_RESTART_TRANSFERS, default 2,000; BENCHMARKS.md used
// 1,000,000): the time to open the directory, the heap it then holds, the
// directory's bytes per transfer (snapshot and journal, as the run left
// them) and a snapshot's. The transfers are created through the handler,
// one after another (two clients were slower on 2 cores: they contend for
// the server's lock), without fsync. CONFPAY_RESTART_DIR names a
// directory to use and keep: a run on one that already holds state creates
// nothing and only restarts (give the same CONFPAY_RESTART_TRANSFERS), so
// that a second process measures the restart alone (/usr/bin/time -v,
// -test.cpuprofile).
func TestDataDirRestartTime(t *testing.T) {
	n := 2_000
	if v := os.Getenv("CONFPAY_RESTART_TRANSFERS"); v != "" {
		if _, err := fmtSscan(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	dir := os.Getenv("CONFPAY_RESTART_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	if _, err := os.Stat(filepath.Join(dir, journal.SnapshotFile)); err == nil {
		t.Logf("%s holds state already: restart only", dir)
	} else {
		srv, err := fakeserver.Open(fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync(), fakeserver.WithoutListener())
		if err != nil {
			t.Fatal(err)
		}
		createTransfers(t, srv, n)
		srv.Close()
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	srv2, err := fakeserver.Open(fakeserver.WithDataDir(dir), fakeserver.WithoutListener())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	defer srv2.Close()
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	var disk int64
	st, err := os.Stat(filepath.Join(dir, journal.SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	jn, err := journalSize(dir)
	if err != nil {
		t.Fatal(err)
	}
	disk = st.Size() + jn
	t.Logf("%d transfers: restart %v (allocating %d MB); live heap after it %d MB; directory %d bytes (%.0f B/transfer)",
		n, took, allocated>>20, after.HeapAlloc>>20, disk, float64(disk)/float64(n))
	if os.Getenv("CONFPAY_RESTART_DIR") == "" {
		snap := len(srv2.Backup())
		t.Logf("a snapshot: %d bytes (%.0f B/transfer)", snap, float64(snap)/float64(n))
	}
}

// TestDataDirRewritePause measures how long a snapshot rewrite holds the
// server's lock at once with many transfers stored
// (CONFPAY_REWRITE_PAUSE_TRANSFERS, default 2,000): the whole rewrite
// under the lock (as before the fuzzy snapshot) against the longest
// single hold of a running server's rewrite (the switch, noting what
// exists, then each chunk of the fuzzy snapshot and its barrier),
// alternating in the same process on the same state, three rounds; with
// the longest hold of hooks.mu by hooks.Dump and the fuzzy rewrite's
// whole time (BENCHMARKS.md).
func TestDataDirRewritePause(t *testing.T) {
	n := 2_000
	if v := os.Getenv("CONFPAY_REWRITE_PAUSE_TRANSFERS"); v != "" {
		if _, err := fmtSscan(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := fakeserver.Open(fakeserver.WithDataDir(t.TempDir()), fakeserver.WithDataDirNoSync(), fakeserver.WithoutListener())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	createTransfers(t, srv, n)
	for round := range 3 {
		whole, _, _ := fakeserver.RewritePause(srv, true)
		t0 := time.Now()
		switched, chunk, dump := fakeserver.RewritePause(srv, false)
		took := time.Since(t0)
		t.Logf("round %d, %d transfers: the lock held %v by a whole rewrite; by a fuzzy one %v at its switch, at most %v by a chunk or its barrier (hooks.mu %v by its Dump); the fuzzy rewrite took %v",
			round, n, whole, switched, chunk, dump, took)
	}
}

// createTransfers makes n transfers of 0.01 USDG from a new @alice to a
// new @bob through srv's handler, and logs the time they took and the
// slowest create.
func createTransfers(t *testing.T, srv *fakeserver.Server, n int) {
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000000000")
	h := srv.Handler()
	var slowest time.Duration
	start := time.Now()
	for range n {
		t0 := time.Now()
		a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`,
			"User-Agent", fakeserver.BulkUserAgent)
		if a.status != 201 {
			t.Fatalf("status %d", a.status)
		}
		slowest = max(slowest, time.Since(t0))
	}
	srv.Settle()
	took := time.Since(start)
	t.Logf("created %d transfers in %v (%v each; the slowest %v)", n, took.Round(time.Millisecond),
		took/time.Duration(max(n, 1)), slowest)
}

func fmtSscan(s string, n *int) (int, error) { return fmt.Sscan(s, n) }

// journalSize is the logical size of dir's journal: its records, not the
// zeros preallocated after them.
func journalSize(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, journal.JournalFile))
	if err != nil {
		return 0, err
	}
	_, good, err := journal.Decode(b)
	return good, err
}
