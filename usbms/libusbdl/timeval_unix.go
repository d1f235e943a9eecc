//go:build linux || darwin

package libusbdl

import "time"

// timeval is struct timeval: two longs on Linux; on macOS tv_usec is a
// 32-bit suseconds_t in an 8-byte slot, which a little-endian int64 below
// 2^31 fills correctly.
type timeval struct {
	sec, usec int64
}

func timevalOf(d time.Duration) timeval {
	return timeval{sec: int64(d / time.Second), usec: int64(d % time.Second / time.Microsecond)}
}
