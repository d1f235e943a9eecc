//go:build unix

package flock

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// forkGrace is how long a lock held elsewhere is tried again before it is
// ErrLocked. A flock belongs to the open file description, and a process
// that forks (to run gpg, xz, losetup) gives its child a copy of every
// descriptor until the child execs and the close-on-exec ones go: for that
// moment a card this process has just closed still looks locked. Another
// usbflash holds its lock for a whole run, so waiting a quarter of a
// second more before saying so costs nothing.
const forkGrace = 250 * time.Millisecond

// Lock locks f without waiting: exclusively for a writer, shared for a
// reader (so a verify and a write never run at once, two verifies may).
// Closing f releases the lock. A lock held elsewhere (still, after
// forkGrace) is ErrLocked.
func Lock(f *os.File, exclusive bool) error {
	return lockWithin(f, exclusive, forkGrace, time.Sleep)
}

// lockWithin is Lock trying again every 5 ms for grace, sleeping with
// sleep (a test's hook).
func lockWithin(f *os.File, exclusive bool, grace time.Duration, sleep func(time.Duration)) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	var lerr error
	try := func() error {
		return rc.Control(func(fd uintptr) {
			for {
				if lerr = unix.Flock(int(fd), how|unix.LOCK_NB); !errors.Is(lerr, unix.EINTR) {
					return
				}
			}
		})
	}
	const step = 5 * time.Millisecond
	for waited := time.Duration(0); ; waited += step {
		if err := try(); err != nil {
			return fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		if !errors.Is(lerr, unix.EWOULDBLOCK) || waited >= grace {
			break
		}
		sleep(step)
	}
	switch {
	case errors.Is(lerr, unix.EWOULDBLOCK):
		return fmt.Errorf("%s: %w", f.Name(), ErrLocked)
	case lerr != nil:
		return fmt.Errorf("locking %s: %w", f.Name(), lerr)
	}
	return nil
}
