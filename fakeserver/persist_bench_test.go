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
// 8 and 64 clients in parallel, without a data directory, with one
// (fsync), and with one without fsync, each without and with an
// Idempotency-Key (a fresh one per request, as the SDK sends), in the
// same run; -count N alternates the modes round by round
// (BENCHMARKS.md).
func BenchmarkTransferCreateDataDir(b *testing.B) {
	for _, clients := range []int{8, 64} {
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
	opts := []fakeserver.Option{fakeserver.WithoutListener(), fakeserver.WithBlockTime(time.Hour)}
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
	b.ResetTimer()
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
	if mode != "memory" {
		srv.Close()
		st, err := os.Stat(filepath.Join(dir, journal.JournalFile))
		if err == nil {
			b.ReportMetric(float64(st.Size())/float64(b.N), "journal-B/transfer")
		}
	}
}

// TestDataDirRestartTime measures a restart with many transfers stored
// (CONFPAY_RESTART_TRANSFERS, default 2,000; BENCHMARKS.md used 100,000):
// the time to open the directory, the directory's bytes per transfer
// (snapshot and journal, as the run left them) and a snapshot's.
func TestDataDirRestartTime(t *testing.T) {
	n := 2_000
	if v := os.Getenv("CONFPAY_RESTART_TRANSFERS"); v != "" {
		if _, err := fmtSscan(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	srv := fakeserver.New(t, fakeserver.WithDataDir(dir), fakeserver.WithDataDirNoSync(), fakeserver.WithoutListener())
	alice := newAccount(t, srv, "@alice")
	newAccount(t, srv, "@bob")
	fundOn(t, srv, alice.info.AccountID, confpay.NetworkTest, "USDG", "1000000000")
	h := srv.Handler()
	for i := 0; i < n; i++ {
		if a := serve(h, "POST", "/v1/transfers", alice.test(), `{"to":"@bob","amount":"0.01"}`); a.status != 201 {
			t.Fatalf("status %d", a.status)
		}
	}
	srv.Settle()
	srv.Close()
	start := time.Now()
	srv2, err := fakeserver.Open(fakeserver.WithDataDir(dir), fakeserver.WithoutListener())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	defer srv2.Close()
	var disk int64
	for _, name := range []string{journal.SnapshotFile, journal.JournalFile} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		disk += st.Size()
	}
	snap := len(srv2.Backup())
	t.Logf("%d transfers: restart %v; directory %d bytes (%.0f B/transfer); a snapshot %d bytes (%.0f B/transfer)",
		n, took, disk, float64(disk)/float64(n), snap, float64(snap)/float64(n))
}

func fmtSscan(s string, n *int) (int, error) { return fmt.Sscan(s, n) }
