//go:build !unix

package confpay

// processCPU is not measured on this platform.
func processCPU() (int64, bool) { return 0, false }
