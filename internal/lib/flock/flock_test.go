//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
