package scsi

import (
	"encoding/binary"
	"fmt"
)

// Capacity is the decoded READ CAPACITY response.
type Capacity struct {
	LastLBA     uint64 // address of the last block, as the device reports it
	BlockLength uint32 // logical block length in bytes
}

// Blocks returns the number of logical blocks. It saturates instead of
// wrapping for the (impossible in practice) last LBA of 2^64-1.
func (c Capacity) Blocks() uint64 {
	if c.LastLBA == ^uint64(0) {
		return c.LastLBA
	}
	return c.LastLBA + 1
}

// Bytes returns the capacity in bytes, saturating at the maximum uint64.
func (c Capacity) Bytes() uint64 {
	n := c.Blocks()
	if c.BlockLength != 0 && n > ^uint64(0)/uint64(c.BlockLength) {
		return ^uint64(0)
	}
	return n * uint64(c.BlockLength)
}

// Needs16 reports whether the device's capacity does not fit READ
// CAPACITY(10), which it signals with a last LBA of 0xFFFFFFFF.
func (c Capacity) Needs16() bool { return c.LastLBA == MaxLBA10 }

// ParseReadCapacity10 decodes the 8-byte READ CAPACITY(10) response.
func ParseReadCapacity10(b []byte) (Capacity, error) {
	if len(b) < 8 {
		return Capacity{}, short("READ CAPACITY(10) data", len(b), 8)
	}
	return Capacity{
		LastLBA:     uint64(binary.BigEndian.Uint32(b[0:4])),
		BlockLength: binary.BigEndian.Uint32(b[4:8]),
	}, nil
}

// ParseReadCapacity16 decodes the READ CAPACITY(16) response; only its first
// 12 bytes are needed.
func ParseReadCapacity16(b []byte) (Capacity, error) {
	if len(b) < 12 {
		return Capacity{}, short("READ CAPACITY(16) data", len(b), 12)
	}
	return Capacity{
		LastLBA:     binary.BigEndian.Uint64(b[0:8]),
		BlockLength: binary.BigEndian.Uint32(b[8:12]),
	}, nil
}

// Validate reports a capacity no writer can use: a block length of zero or
// not a power of two from 512 to 64 KiB.
func (c Capacity) Validate() error {
	l := c.BlockLength
	if l < 512 || l > 65536 || l&(l-1) != 0 {
		return fmt.Errorf("scsi: device reports a block length of %d bytes, not a power of two from 512 to 65536: %w", l, ErrMalformed)
	}
	return nil
}
