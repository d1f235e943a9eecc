//go:build unix

package flock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Lock locks f without waiting: exclusively for a writer, shared for a
// reader (so a verify and a write never run at once, two verifies may).
// Closing f releases the lock. A lock held elsewhere is ErrLocked.
func Lock(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if lerr = unix.Flock(int(fd), how|unix.LOCK_NB); !errors.Is(lerr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	switch {
	case errors.Is(lerr, unix.EWOULDBLOCK):
		return fmt.Errorf("%s: %w", f.Name(), ErrLocked)
	case lerr != nil:
		return fmt.Errorf("locking %s: %w", f.Name(), lerr)
	}
	return nil
}
