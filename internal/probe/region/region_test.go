package region

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// hookedWrites runs before on the first write, then writes (or fails).
type hookedWrites struct {
	blockdev.Device
	once   sync.Once
	before func()
	fail   bool
}

func (h *hookedWrites) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	h.once.Do(func() {
		if h.before != nil {
			h.before()
		}
	})
	if h.fail {
		return fmt.Errorf("WRITE at LBA %d: medium error", lba)
	}
	return h.Device.WriteBlocks(ctx, lba, p)
}

// TestFinish: the region comes back whatever ended the write tests, a
// cancel during the restore still makes the run a cancelled one, and a
// restore that fails leaves the saved bytes in a file.
func TestFinish(t *testing.T) {
	region := Region{Name: "region", Offset: 2 << 20, Length: 3 << 20}
	runFailed := errors.New("write sweep: medium error")
	tests := []struct {
		name         string
		runErr       error
		cancelBefore bool // the run was cancelled (the first Ctrl-C)
		cancelDuring bool // a cancel comes during the restore
		failWrites   bool
		wantIs       error // nil: no error
		wantRestored bool
		wantFile     bool
	}{
		{"after a run that finished", nil, false, false, false, nil, true, false},
		{"after a failed run", runFailed, false, false, false, runFailed, true, false},
		{"after a cancelled run", context.Canceled, true, false, false, context.Canceled, true, false},
		{"a cancel during the final restore", nil, false, true, false, context.Canceled, true, false},
		{"a restore that fails", nil, false, false, true, nil, false, true},
		{"a restore that fails after a cancel", context.Canceled, true, false, true, context.Canceled, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSimCard(t, cardSize)
			orig := c.hash(t, region.Offset, region.Length)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			saved, err := Save(ctx, c.lun, "sim:card.img", region)
			if err != nil {
				t.Fatal(err)
			}
			c.overwrite(t, region)
			if tt.cancelBefore {
				cancel()
			}
			dev := &hookedWrites{Device: c.lun, fail: tt.failWrites}
			if tt.cancelDuring {
				dev.before = cancel
			}
			var restoring []bool
			restored := false
			dir := t.TempDir()
			err = saved.Finish(ctx, dev, tt.runErr, FinishOptions{Dir: dir,
				Restoring: func(c bool) { restoring = append(restoring, c) },
				Restored:  func() { restored = true }})
			if len(restoring) != 1 || restoring[0] != tt.cancelBefore {
				t.Errorf("Restoring called with %v, want once with %v", restoring, tt.cancelBefore)
			}
			if restored != tt.wantRestored || (c.hash(t, region.Offset, region.Length) == orig) != tt.wantRestored {
				t.Errorf("restored %v, want %v", restored, tt.wantRestored)
			}
			var re *RestoreError
			switch {
			case tt.wantFile:
				if !errors.As(err, &re) || re.File == "" {
					t.Fatalf("Finish = %v, want a *RestoreError naming a file", err)
				}
				got, _ := os.ReadFile(re.File)
				if !bytes.Equal(got, saved.Bytes()) || !strings.HasPrefix(re.File, dir) {
					t.Errorf("%s does not hold the saved bytes in %s", re.File, dir)
				}
				if !strings.Contains(err.Error(), "the saved bytes are in "+re.File) || !strings.Contains(err.Error(), "bytes 2097152 to 5242880 of sim:card.img") {
					t.Errorf("error %q does not say where the bytes are", err)
				}
			case errors.As(err, &re):
				t.Errorf("Finish = %v, a restore error after a restore that worked", err)
			case tt.wantIs == nil && err != nil:
				t.Errorf("Finish = %v, want nil", err)
			case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
				t.Errorf("Finish = %v, want one wrapping %v", err, tt.wantIs)
			case tt.wantIs != nil && !strings.Contains(err.Error(), "restored and verified"):
				t.Errorf("Finish = %q, does not say the region was restored", err)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Finish = %v, want one wrapping %v", err, tt.wantIs)
			}
		})
	}
}

// blockingWrites is a device whose writes wait until release is closed,
// as a reader that stopped answering does.
type blockingWrites struct {
	blockdev.Device
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingWrites) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	b.once.Do(func() { close(b.started) })
	<-b.release
	return b.Device.WriteBlocks(ctx, lba, p)
}

// TestAbandon: the second interrupt during a restore keeps the saved
// bytes in a file at once, and Finish then says the same thing (the same
// file, no "restored"), whether the restore it let go on fails or comes
// through; after a verified restore it keeps nothing. One of them speaks
// for the region.
func TestAbandon(t *testing.T) {
	tests := []struct {
		name        string
		failWrites  bool
		afterFinish bool // the interrupt comes once Finish returned
		wantAborted bool // Finish returns the abort itself
	}{
		{"during a restore that then fails", true, false, false},
		{"during a restore that then comes through", false, false, true},
		{"after the restore was verified", false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSimCard(t, cardSize)
			region := Region{Name: "region", Offset: 1 << 20, Length: 1 << 20}
			saved, err := Save(context.Background(), c.lun, "sim:card.img", region)
			if err != nil {
				t.Fatal(err)
			}
			saved.Disk = "/dev/sdz" // the caller's: every RestoreError names it
			dev := &blockingWrites{Device: &hookedWrites{Device: c.lun, fail: tt.failWrites}, started: make(chan struct{}), release: make(chan struct{})}
			dir := t.TempDir()
			restored := false
			done := make(chan error, 1)
			go func() {
				done <- saved.Finish(context.Background(), dev, nil, FinishOptions{Dir: dir, Restored: func() { restored = true }})
			}()
			<-dev.started
			if tt.afterFinish {
				close(dev.release)
				if err := <-done; err != nil || !restored {
					t.Fatalf("Finish = %v, restored %v; want a verified restore", err, restored)
				}
				if e := saved.Abandon(dir); e != nil {
					t.Errorf("Abandon after a verified restore = %v, want nil", e)
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("%d files in %s, want none: the region is back", len(entries), dir)
				}
				return
			}

			abandoned := saved.Abandon(dir)
			if abandoned == nil || !abandoned.Aborted || !errors.Is(abandoned, context.Canceled) || abandoned.File == "" || abandoned.Disk != "/dev/sdz" {
				t.Fatalf("Abandon = %+v, want an aborted restore with a file", abandoned)
			}
			if got, _ := os.ReadFile(abandoned.File); !bytes.Equal(got, saved.Bytes()) {
				t.Error("the file does not hold the saved bytes")
			}
			if msg := abandoned.Error(); !strings.Contains(msg, "aborted") || !strings.Contains(msg, abandoned.File) {
				t.Errorf("message %q", msg)
			}

			close(dev.release)
			var re *RestoreError
			err = <-done
			if !errors.As(err, &re) || re.File != abandoned.File || re.Aborted != tt.wantAborted || re.Disk != "/dev/sdz" {
				t.Errorf("Finish after the abort = %v, want the file %s (aborted %v)", err, abandoned.File, tt.wantAborted)
			}
			if restored {
				t.Error("Finish said the region was restored after the user was told the restore was aborted")
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("%d files in %s, want 1", len(entries), dir)
			}
		})
	}
}

// TestSaveRestore: a region of no whole number of chunks comes back,
// and one larger than memory allows is refused.
func TestSaveRestore(t *testing.T) {
	c := newSimCard(t, cardSize)
	region := Region{Name: "stated", Offset: 3 << 20, Length: 9<<20 + 512} // not whole chunks
	before := c.hash(t, 0, cardSize)
	ctx := context.Background()
	saved, err := Save(ctx, c.lun, "sim", region)
	if err != nil {
		t.Fatal(err)
	}
	c.overwrite(t, region)
	if c.hash(t, 0, cardSize) == before {
		t.Fatal("the overwrite changed nothing: the test proves nothing")
	}
	if err := saved.Restore(ctx, c.lun); err != nil {
		t.Fatal(err)
	}
	if c.hash(t, 0, cardSize) != before {
		t.Error("Restore did not bring the card back")
	}
	if _, err := Save(ctx, c.lun, "sim", Region{Length: MaxSave + 512}); err == nil {
		t.Error("Save accepted a region larger than MaxSave")
	}
}

// A restore that reads back something else names the byte.
func TestRestoreVerifies(t *testing.T) {
	c := newSimCard(t, cardSize)
	region := Region{Name: "stated", Offset: 1 << 20, Length: 1 << 20}
	saved, err := Save(context.Background(), c.lun, "sim", region)
	if err != nil {
		t.Fatal(err)
	}
	saved.data[4096] ^= 1
	// The card must return the saved data on read-back; a medium that drops
	// the write is what verification is for.
	err = saved.Restore(context.Background(), dropWrites{c.lun})
	if err == nil || !strings.Contains(err.Error(), "byte 1052672") {
		t.Errorf("Restore through a device that drops writes = %v, want the first differing byte named", err)
	}
}

// dropWrites is a device whose writes vanish.
type dropWrites struct{ blockdev.Device }

func (dropWrites) WriteBlocks(context.Context, int64, []byte) error { return nil }
