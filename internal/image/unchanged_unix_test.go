//go:build unix

package image

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCheckUnchangedFIFO: an image read from a named pipe is read once;
// its times move as the writer fills it, which is no change of the image.
func TestCheckUnchangedFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "os.img")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	img := genOSImage(64<<10, 3)
	done := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		// Half now, half once the reader has surely opened, sniffed
		// and stat'ed it: the second write moves the pipe's times.
		if _, err = f.Write(img[:len(img)/2]); err == nil {
			time.Sleep(50 * time.Millisecond)
			_, err = f.Write(img[len(img)/2:])
		}
		done <- err
	}()
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := io.ReadAll(s)
	if err != nil || !bytes.Equal(got, img) {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.CheckUnchanged(); err != nil {
		t.Errorf("CheckUnchanged of a named pipe: %v", err)
	}
}
