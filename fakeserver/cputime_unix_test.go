//go:build unix

package fakeserver_test

import "syscall"

// processCPU returns the process's user+system CPU time in nanoseconds.
func processCPU() (int64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
