//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// flock locks belong to the open file description, so two opens in one
// process conflict as two processes would.
func TestLock(t *testing.T) {
	tests := []struct {
		name          string
		first, second bool // exclusive?
		wantLocked    bool
	}{
		{"writer then writer", true, true, true},
		{"writer then reader", true, false, true},
		{"reader then writer", false, true, true},
		{"reader then reader", false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "card.img")
			if err := os.WriteFile(path, make([]byte, 512), 0o644); err != nil {
				t.Fatal(err)
			}
			open := func() *os.File {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				return f
			}
			a, b := open(), open()
			if err := Lock(a, tc.first); err != nil {
				t.Fatalf("first lock: %v", err)
			}
			err := Lock(b, tc.second)
			if errors.Is(err, ErrLocked) != tc.wantLocked {
				t.Fatalf("second lock: %v, want locked: %v", err, tc.wantLocked)
			}
			if !tc.wantLocked {
				return
			}
			a.Close()
			if err := Lock(b, tc.second); err != nil {
				t.Errorf("after the first closed: %v", err)
			}
		})
	}
}

// A lock held only for a moment (a forked child's copy of a descriptor,
// until it execs) is waited out; one held for the whole grace is ErrLocked.
func TestLockWaitsOutAMomentaryHolder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		releaseAt  int // the sleep call that releases the holder; 0: never
		wantLocked bool
		wantSleeps int
	}{
		{"released after the first try", 1, false, 1},
		{"released after ten tries", 10, false, 10},
		{"held throughout", 0, true, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "card.img")
			if err := os.WriteFile(path, make([]byte, 512), 0o644); err != nil {
				t.Fatal(err)
			}
			holder, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := Lock(holder, true); err != nil {
				t.Fatal(err)
			}
			sleeps := 0
			err = lockWithin(f, true, 250*time.Millisecond, func(time.Duration) {
				if sleeps++; sleeps == tc.releaseAt {
					holder.Close()
				}
			})
			if errors.Is(err, ErrLocked) != tc.wantLocked || (!tc.wantLocked && err != nil) {
				t.Fatalf("lock: %v, want locked %v", err, tc.wantLocked)
			}
			if sleeps != tc.wantSleeps {
				t.Errorf("%d sleeps, want %d", sleeps, tc.wantSleeps)
			}
		})
	}
}
