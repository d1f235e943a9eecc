package cardbench

import (
	"bytes"
	"context"
	"fmt"

	"usbflash/blockdev"
	"usbflash/internal/aligned"
)

// MaxPreserve is the largest region Save keeps: it is held in memory.
const MaxPreserve = 512 << 20

// preserveChunk is the transfer Save and Restore use.
const preserveChunk = 4 << 20

// Saved is a region's content as it was before a write test.
type Saved struct {
	Region Region
	data   []byte
}

// Save reads region into memory, so Restore can put it back.
func Save(ctx context.Context, dev blockdev.Device, region Region) (*Saved, error) {
	if region.Length > MaxPreserve {
		return nil, fmt.Errorf("region of %d bytes: at most %d can be preserved (it is kept in memory)", region.Length, int64(MaxPreserve))
	}
	s := &Saved{Region: region, data: aligned.Bytes(int(region.Length))}
	if err := chunks(region, func(off, start, end int64) error {
		return dev.ReadBlocks(ctx, off/int64(dev.BlockSize()), s.data[start:end])
	}); err != nil {
		return nil, fmt.Errorf("saving the region at byte %d: %w", region.Offset, err)
	}
	return s, nil
}

// Bytes is the saved content, for a recovery file when Restore fails.
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
	back := aligned.Bytes(int(min(preserveChunk, s.Region.Length)))
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

// chunks calls fn for each piece of region: its byte offset on the card
// and its [start, end) within the region.
func chunks(region Region, fn func(off, start, end int64) error) error {
	for at := int64(0); at < region.Length; at += preserveChunk {
		end := min(at+preserveChunk, region.Length)
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
	return &Saved{Region: r, data: s.data[:n]}
}
