package journal

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkWait is the journal alone under group commit: clients
// goroutines each append a record of a transfer's size (960 bytes) and
// wait for it to be durable, as many times as b.N says. It reports the
// process's CPU per record, records per flush, and the wall time per
// flush (the journal's one flush at a time is the -data limit at 64
// clients: BENCHMARKS.md, "Fakeserver data directory").
func BenchmarkWait(b *testing.B) {
	for _, clients := range []int{64} {
		b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) {
			j, _, err := Open(b.TempDir(), false)
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			rec := make([]byte, 960)
			for i := range rec {
				rec[i] = byte(i)
			}
			b.SetParallelism(clients / 2) // GOMAXPROCS 2
			f0, cpu0, t0 := j.Flushes(), cpuNow(), time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := j.Wait(j.Append(rec)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			flushes := float64(j.Flushes() - f0)
			b.ReportMetric(float64(cpuNow()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(b.N)/flushes, "records/flush")
			b.ReportMetric(float64(time.Since(t0).Microseconds())/flushes, "µs/flush")
		})
	}
}
