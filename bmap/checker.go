package bmap

import (
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

// Checker passes an image stream through, hashing every mapped range and
// comparing it with the map's checksum as the range's last byte goes by.
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
	for c.i < len(c.m.Ranges) {
		r := c.m.Ranges[c.i]
		ro, re := c.m.Bytes(r)
		if ro >= end {
			return nil
		}
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
