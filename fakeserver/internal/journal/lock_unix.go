//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on path, without waiting. The kernel
// drops it when the process dies (kill -9 included), so a stale LOCK file
// never keeps a restarted server out.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("journal: %s is in use by another confpay-fakeserver (it holds %s)", path[:len(path)-len(LockFile)-1], LockFile)
		}
		return nil, fmt.Errorf("journal: lock: %w", err)
	}
	return f, nil
}

func unlockDir(f *os.File) { f.Close() } // closing drops the flock
