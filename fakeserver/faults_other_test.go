//go:build !linux

package fakeserver_test

// processFaults is not measured on this platform.
func processFaults() (int64, bool) { return 0, false }
