//go:build !linux

package journal

import "os"

// datasync, off linux, is f.Sync: fsync, or the platform's equivalent.
func datasync(f *os.File) error { return f.Sync() }
