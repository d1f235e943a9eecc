//go:build unix

// Package testfifo makes named pipes for tests of code that must read an
// image once, as it comes from a pipe: curl | usbflash, <(...), mkfifo.
package testfifo

import (
	"io"
	"os"
	"syscall"
	"testing"
)

// Make creates a FIFO at path and feeds data into it from a goroutine as
// soon as a reader opens it, then closes it (the reader sees the end). A
// FIFO nobody opened is drained at the test's end, so the feeder never
// outlives the test.
func Make(tb testing.TB, path string, data []byte) {
	tb.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		tb.Fatal(err)
	}
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		// A reader that stops early fails the write here, and its own
		// test says what it read.
		w.Write(data)
	}()
	tb.Cleanup(func() {
		if r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			io.Copy(io.Discard, r)
			r.Close()
		}
		<-fed
	})
}
