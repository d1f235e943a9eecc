package bmap

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
)

// ChecksumError is a mapped range whose bytes do not hash to the map's
// checksum.
type ChecksumError struct {
	Range     Range
	Off, End  int64 // the range's bytes in the image: [Off, End)
	Type      string
	Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("block map range %s (image bytes %d-%d): %s is %s but the map says %s",
		e.Range, e.Off, e.End-1, e.Type, e.Got, e.Want)
}

// UnmappedDataError is image data the map leaves out: a write with the
// map would not send it, and the card would keep its old bytes there. A
// map made by bmaptool maps every block the file system allocated, so an
// unmapped block that is not zero means the map is not this image's (or
// was edited).
type UnmappedDataError struct {
	Off int64 // the first byte that is not zero
}

func (e *UnmappedDataError) Error() string {
	return fmt.Sprintf("image byte %d holds data but the block map leaves it out: the card would keep its old bytes there", e.Off)
}

// Checker passes an image stream through, hashing every mapped range and
// comparing it with the map's checksum as the range's last byte goes by.
// Every byte the map leaves out must be zero (*UnmappedDataError).
//
// Each Read fills p completely unless the stream ends or fails, and a Read
// in which a range's checksum fails returns no bytes at all, only the
// *ChecksumError. A reader that hands each Read a whole transfer (as the
// pipeline does) therefore never writes the transfer holding the end of a
// bad range. Earlier transfers of a long range are written before the
// checksum can be known: holding a range of hundreds of megabytes until its
// end is not affordable, and the pipeline writes the first transfer (the
// partition table) last, so a stopped write does not leave a bootable card.
//
// At the end of the stream the image size must be the map's: a longer or
// shorter stream is an *Error.
type Checker struct {
	m   *Map
	src io.Reader
	off int64 // image bytes passed
	i   int   // the first range not yet complete
	h   hash.Hash
	err error // sticky
}

// NewChecker checks src against m.
func NewChecker(m *Map, src io.Reader) *Checker {
	c := &Checker{m: m, src: src}
	if m.ChecksumType != "" {
		c.h = newHash(m.ChecksumType)
	}
	return c
}

func (c *Checker) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := fill(c.src, p)
	if c.off+int64(n) > c.m.ImageSize {
		c.err = errorf("the image is longer than the %d bytes the map was made for", c.m.ImageSize)
		return 0, c.err
	}
	if cerr := c.scan(p[:n]); cerr != nil {
		c.err = cerr
		return 0, cerr
	}
	c.off += int64(n)
	if err == io.EOF && c.off != c.m.ImageSize {
		c.err = errorf("the image ends after %d bytes but the map was made for %d", c.off, c.m.ImageSize)
		return n, c.err
	}
	return n, err
}

// scan hashes the parts of mapped ranges in p (at image offset c.off) and
// checks every range that ends in p.
func (c *Checker) scan(p []byte) error {
	start, end := c.off, c.off+int64(len(p))
	pos := start // bytes before pos are mapped or checked to be zero
	for c.i < len(c.m.Ranges) {
		r := c.m.Ranges[c.i]
		ro, re := c.m.Bytes(r)
		if ro > pos {
			if err := zeroes(p[pos-start:min(ro, end)-start], pos); err != nil {
				return err
			}
		}
		if ro >= end {
			return nil
		}
		pos = max(pos, min(re, end))
		if c.h != nil && r.Checksum != "" {
			if ro >= start {
				c.h.Reset()
			}
			c.h.Write(p[max(ro, start)-start : min(re, end)-start])
		}
		if re > end {
			return nil // continues in the next read
		}
		if c.h != nil && r.Checksum != "" {
			if got := hex.EncodeToString(c.h.Sum(nil)); got != r.Checksum {
				return &ChecksumError{Range: r, Off: ro, End: re, Type: c.m.ChecksumType, Want: r.Checksum, Got: got}
			}
		}
		c.i++
	}
	return zeroes(p[pos-start:], pos)
}

// zeroes says where b, at image offset off, first holds a byte that is
// not zero (nil when none does).
func zeroes(b []byte, off int64) error {
	var zero [4096]byte
	for i := 0; i < len(b); i += len(zero) {
		chunk := b[i:min(i+len(zero), len(b))]
		if bytes.Equal(chunk, zero[:len(chunk)]) { // vectorised
			continue
		}
		for j, v := range chunk {
			if v != 0 {
				return &UnmappedDataError{Off: off + int64(i+j)}
			}
		}
	}
	return nil
}

// fill reads until p is full or src fails; a src that keeps returning
// nothing without an error stops with io.ErrNoProgress.
func fill(src io.Reader, p []byte) (int, error) {
	n, empty := 0, 0
	for n < len(p) {
		m, err := src.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
		if m > 0 {
			empty = 0
		} else if empty++; empty > 100 {
			return n, io.ErrNoProgress
		}
	}
	return n, nil
}
