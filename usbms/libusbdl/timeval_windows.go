//go:build windows

package libusbdl

import "time"

// timeval is winsock's struct timeval, which libusb's Windows build
// uses: two 32-bit longs, on 64-bit Windows too.
type timeval struct {
	sec, usec int32
}

func timevalOf(d time.Duration) timeval {
	return timeval{sec: int32(d / time.Second), usec: int32(d % time.Second / time.Microsecond)}
}
