//go:build !unix

package journal

import (
	"errors"
	"fmt"
	"os"
)

// lockDir, off unix, creates path exclusively: a second server is refused
// while it exists, and Close removes it. A server killed without Close
// leaves it behind; remove it by hand once no server runs on the
// directory.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("journal: %s exists: another confpay-fakeserver uses the directory, or one was killed (then remove the file)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return f, nil
}

func unlockDir(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}
