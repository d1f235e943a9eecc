// Package region saves byte ranges of a card before they are
// overwritten and puts them back after: in memory while the work runs,
// and in a file when they cannot be put back, so nothing is lost. The
// benchmark's write tests (cardbench) and the fake-card probe (fakecheck)
// both keep what they overwrite this way.
package region

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Region is a byte range of a card.
type Region struct {
	Name   string
	Offset int64
	Length int64
}

// End is the byte just past r.
func (r Region) End() int64 { return r.Offset + r.Length }

// MaxSave is the largest region Save keeps: it is held in memory.
const MaxSave = 512 << 20

// chunk is the transfer Save and Restore use.
const chunk = 4 << 20

// RestoreTimeout bounds a restore the user's cancel did not stop: long
// enough for the largest preserved region on a slow card.
const RestoreTimeout = 10 * time.Minute

// Saved is a region's content as it was before it was written over, and the one
// copy of it until the region is restored: Finish puts it back, and when
// that fails, or the user aborts it (Abandon), the bytes go to a file.
type Saved struct {
	Region    Region
	Device    string // names the device in errors
	BlockSize int
	// Disk is the node the system gives the device (/dev/sdb), when the
	// caller knows one: what a command that puts the bytes back writes
	// to. "" when not known. Claimed: it is the disk a reader's slot was
	// before usbflash claimed the reader, gone until it is let go.
	Disk    string
	Claimed bool
	data    []byte

	keepOnce sync.Once
	file     string // Keep's file
	fileErr  error

	// One of Finish and Abandon speaks for the region: a restore verified
	// before the user's abort is a restored region (Abandon has nothing
	// to keep), an abort that came first is the outcome Finish returns.
	mu        sync.Mutex
	restored  bool
	abandoned bool
}

// Save reads region of dev (named name in errors) into memory, so Restore
// can put it back.
func Save(ctx context.Context, dev blockdev.Device, name string, region Region) (*Saved, error) {
	if region.Length > MaxSave {
		return nil, failure.Errorf(failure.Usage, "a region of %d bytes cannot be saved: it is kept in memory, at most %d", region.Length, int64(MaxSave))
	}
	s := &Saved{Region: region, Device: name, BlockSize: dev.BlockSize(), data: aligned.Bytes(int(region.Length))}
	if err := chunks(region, func(off, start, end int64) error {
		return dev.ReadBlocks(ctx, off/int64(dev.BlockSize()), s.data[start:end])
	}); err != nil {
		return nil, fmt.Errorf("saving the region at byte %d: %w", region.Offset, err)
	}
	return s, nil
}

// Held is a region whose content the caller already holds (data, whole
// blocks of the card, kept as it is): what a List keeps, for a change the
// caller made in memory before writing it.
func Held(region Region, device string, blockSize int, data []byte) *Saved {
	return &Saved{Region: region, Device: device, BlockSize: blockSize, data: data}
}

// Bytes is the saved content.
func (s *Saved) Bytes() []byte { return s.data }

// Restore writes the saved content back, syncs, and reads it back to
// compare. The caller passes a context that the user's cancel does not
// end: a restore is what a cancel must still do.
func (s *Saved) Restore(ctx context.Context, dev blockdev.Device) error {
	if err := s.WriteBack(ctx, dev); err != nil {
		return err
	}
	if err := dev.Sync(ctx); err != nil {
		return fmt.Errorf("restoring the region at byte %d: sync: %w", s.Region.Offset, err)
	}
	return s.Verify(ctx, dev)
}

// WriteBack writes the saved content back without syncing: Restore's
// first step, for a caller that puts many regions back and syncs once.
func (s *Saved) WriteBack(ctx context.Context, dev blockdev.Device) error {
	bs := int64(dev.BlockSize())
	if err := chunks(s.Region, func(off, start, end int64) error {
		return dev.WriteBlocks(ctx, off/bs, s.data[start:end])
	}); err != nil {
		return fmt.Errorf("restoring the region at byte %d: %w", s.Region.Offset, err)
	}
	return nil
}

// Verify reads the region back and compares it with the saved content:
// Restore's last step.
func (s *Saved) Verify(ctx context.Context, dev blockdev.Device) error {
	bs := int64(dev.BlockSize())
	back := aligned.Bytes(int(min(chunk, s.Region.Length)))
	return chunks(s.Region, func(off, start, end int64) error {
		q := back[:end-start]
		if err := dev.ReadBlocks(ctx, off/bs, q); err != nil {
			return fmt.Errorf("verifying the restored region: %w", err)
		}
		if i := mismatch(q, s.data[start:end]); i >= 0 {
			return fmt.Errorf("verifying the restored region: byte %d (LBA %d) reads back different from what was saved", off+i, (off+i)/bs)
		}
		return nil
	})
}

// Keep writes the saved bytes to a new file in dir (the system's
// temporary directory when ""), once: every call returns that file. It
// reads only memory, so it may run beside a restore under way.
func (s *Saved) Keep(dir string) (string, error) {
	s.keepOnce.Do(func() {
		f, err := os.CreateTemp(dir, fmt.Sprintf("usbflash-region-%d-*.img", s.Region.Offset))
		if err != nil {
			s.fileErr = err
			return
		}
		_, err = f.Write(s.data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
			s.fileErr = err
			return
		}
		s.file = f.Name()
	})
	return s.file, s.fileErr
}

// FinishOptions tune Finish.
type FinishOptions struct {
	// Dir is where the saved bytes go when the region cannot be put back;
	// "": the system's temporary directory.
	Dir string
	// Timeout bounds the restore; 0: RestoreTimeout.
	Timeout time.Duration
	// Restoring, when set, is called before the region is written back,
	// with whether the run was cancelled.
	Restoring func(cancelled bool)
	// Restored, when set, is called once the region is written back and
	// read back the same.
	Restored func()
}

// Finish ends the write tests that began with Save, whatever they
// returned (runErr): it restores the region. The user's cancel of ctx
// does not stop it (a half-written region is what preserving prevents):
// it runs without ctx's cancel, for at most o.Timeout.
//
// It returns runErr, noting that the region was restored; a cancel that
// came during the restore itself is returned as one too (wrapping
// context.Canceled), so a cancelled run never looks finished. When the
// region cannot be put back, the saved bytes go to a file (Keep) and the
// error is a *RestoreError, joined with runErr.
func (s *Saved) Finish(ctx context.Context, dev blockdev.Device, runErr error, o FinishOptions) error {
	if o.Timeout <= 0 {
		o.Timeout = RestoreTimeout
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.Timeout)
	defer cancel()
	if o.Restoring != nil {
		o.Restoring(ctx.Err() != nil)
	}
	if err := s.Restore(rctx, dev); err != nil {
		file, ferr := s.Keep(o.Dir)
		re := &RestoreError{Region: s.Region, Device: s.Device, Disk: s.Disk, Claimed: s.Claimed, BlockSize: s.BlockSize, Err: err, File: file, FileErr: ferr}
		if runErr == nil {
			return re
		}
		return fmt.Errorf("%w; %w", runErr, re) // one line, both causes
	}
	s.mu.Lock()
	abandoned := s.abandoned
	s.restored = !abandoned
	s.mu.Unlock()
	if abandoned {
		// The user aborted the restore before it was verified, and was
		// told so: that is what became of the region.
		return s.abandonError(o.Dir)
	}
	if o.Restored != nil {
		o.Restored()
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("%w (the region was restored and verified)", runErr)
	case ctx.Err() != nil:
		return errCancelledRestored
	}
	return nil
}

// errCancelledRestored is a cancel that came while the region was being
// restored after every measurement: the run did not finish, the region is
// back.
var errCancelledRestored error = cancelledRestore{}

type cancelledRestore struct{}

func (cancelledRestore) Error() string {
	return "cancelled while the region was restored; it was restored and verified"
}
func (cancelledRestore) Unwrap() error { return context.Canceled }

// Abandon is the user's second interrupt while the region may still hold
// the write tests' data: the saved bytes go to a file (Keep), and the
// *RestoreError says where. It touches no device, so a restore stuck in a
// command the reader does not answer does not hold it up. It returns nil,
// keeping nothing, when Finish already put the region back and verified
// it; once it returned an error, Finish returns that error too.
func (s *Saved) Abandon(dir string) *RestoreError {
	s.mu.Lock()
	restored := s.restored
	s.abandoned = !restored
	s.mu.Unlock()
	if restored {
		return nil
	}
	return s.abandonError(dir)
}

func (s *Saved) abandonError(dir string) *RestoreError {
	file, ferr := s.Keep(dir)
	return &RestoreError{Region: s.Region, Device: s.Device, Disk: s.Disk, Claimed: s.Claimed, BlockSize: s.BlockSize, Aborted: true, File: file, FileErr: ferr}
}

// RestoreError is a preserved region that was not put back: the restore
// failed, or the user aborted it. It says where the saved bytes are.
type RestoreError struct {
	Region    Region
	Device    string
	Disk      string // the Saved's: the device's node, "" when not known
	Claimed   bool   // the Saved's: Disk was the claimed reader's
	BlockSize int
	// Aborted: the user stopped the restore (a second interrupt); the
	// region may be half restored. Err is then context.Canceled.
	Aborted bool
	Err     error  // why the restore failed
	File    string // the saved bytes; "" when they could not be written (FileErr)
	FileErr error
}

func (e *RestoreError) Error() string {
	r := e.Region
	var b strings.Builder
	if e.Aborted {
		fmt.Fprintf(&b, "the restore of bytes %d to %d of %s was aborted: they may hold what was written over them", r.Offset, r.Offset+r.Length, e.Device)
	} else {
		fmt.Fprintf(&b, "bytes %d to %d of %s were not restored: %v", r.Offset, r.Offset+r.Length, e.Device, e.Err)
	}
	if e.File != "" {
		fmt.Fprintf(&b, "; the saved bytes are in %s", e.File)
	} else {
		fmt.Fprintf(&b, "; writing the saved bytes to a file failed too: %v", e.FileErr)
	}
	return b.String()
}

// Class: a region not put back is the device's failure, unless the user
// stopped the restore.
func (e *RestoreError) Class() failure.Class {
	if e.Aborted {
		return failure.Interrupted
	}
	return failure.Device
}

func (e *RestoreError) Unwrap() error {
	if e.Aborted {
		return context.Canceled
	}
	return e.Err
}

// chunks calls fn for each piece of region: its byte offset on the card
// and its [start, end) within the region.
func chunks(region Region, fn func(off, start, end int64) error) error {
	for at := int64(0); at < region.Length; at += chunk {
		end := min(at+chunk, region.Length)
		if err := fn(region.Offset+at, at, end); err != nil {
			return err
		}
	}
	return nil
}

func mismatch(a, b []byte) int64 {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return int64(i)
		}
	}
	return int64(len(a))
}

// Before is the part of s that lies before byte end of the card (nil when
// none does): a caller that knows the blocks past end hold nothing (a fake
// card's) verifies only the rest.
func (s *Saved) Before(end int64) *Saved {
	switch {
	case s.Region.Offset >= end:
		return nil
	case s.Region.Offset+s.Region.Length <= end:
		return s
	}
	n := end - s.Region.Offset
	r := s.Region
	r.Length = n
	return &Saved{Region: r, Device: s.Device, BlockSize: s.BlockSize, data: s.data[:n]}
}
