//go:build !unix

package fakeserver_test

// processCPU is not measured on this platform.
func processCPU() (int64, bool) { return 0, false }
