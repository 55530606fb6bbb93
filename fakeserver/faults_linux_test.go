package fakeserver_test

import "syscall"

// processFaults returns the process's minor page faults so far: each is a
// first touch of a fresh page, which a heap that grows pays for (about
// 15 µs of CPU each on the 2-core VM of BENCHMARKS.md).
func processFaults() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Minflt, true
}
