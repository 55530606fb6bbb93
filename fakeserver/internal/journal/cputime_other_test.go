//go:build !unix

package journal

// cpuNow is 0 off unix (BenchmarkWait's cpu-ns/op then reads 0).
func cpuNow() int64 { return 0 }
