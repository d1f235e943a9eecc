package flash

import (
	"context"
	"errors"

	"github.com/usbflash/usbflash/imagesrc"
)

// ErrChecksumOfStdin: a download's checksum is of a file; standard input
// is read once, by the decoder.
var ErrChecksumOfStdin = errors.New("--sha256 checks an image file, not standard input")

// download checks the image file against its publisher's SHA-256. The
// file is hashed on its own goroutine while the cards are opened and
// written (it is the compressed file, a fraction of the image, and mostly
// in the page cache by then); each write waits for the answer before its
// first transfer.
type download struct {
	image, from, want string

	done chan struct{}
	got  string
	err  error
}

// checkDownload finds the checksum (Config.SHA256, or a file beside the
// image), says which, and starts hashing the image file.
func (s *session) checkDownload(ctx context.Context) error {
	want, from := s.cfg.SHA256, "--sha256"
	switch {
	case want != "":
		sum, err := imagesrc.ParseSHA256(want)
		if err != nil {
			return &ChecksumArgError{Err: err}
		}
		if s.cfg.Image == "-" {
			return &ChecksumArgError{Err: ErrChecksumOfStdin}
		}
		want = sum
	case s.cfg.NoSHA256:
		return nil
	default:
		found, passed, err := imagesrc.FindChecksum(s.cfg.Image)
		for _, p := range passed {
			s.emit(Note{Message: p.String()})
		}
		if err != nil {
			return &ImageError{Err: err}
		}
		if found == nil || found.Decoded {
			return nil
		}
		want, from = found.Sum, found.Path
		if found.Signed {
			from += " (a signed list; its signature was not checked)"
		}
	}
	d := &download{image: s.cfg.Image, from: from, want: want, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.got, d.err = imagesrc.FileSHA256(ctx, d.image)
	}()
	s.download = d
	s.emit(Note{Message: "Checking " + s.cfg.Image + " against the SHA-256 in " + from + " as it is written"})
	return nil
}

// check waits for the file's hash and compares it; nil when there is
// nothing to check.
func (d *download) check(ctx context.Context) error {
	if d == nil {
		return nil
	}
	select {
	case <-d.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	switch {
	case d.err != nil:
		return &ImageError{Err: d.err}
	case d.got != d.want:
		return &imagesrc.ChecksumMismatchError{Image: d.image, From: d.from, Want: d.want, Got: d.got}
	}
	return nil
}

// ChecksumArgError is a --sha256 that cannot be used.
type ChecksumArgError struct{ Err error }

func (e *ChecksumArgError) Error() string { return "--sha256: " + e.Err.Error() }
func (e *ChecksumArgError) Unwrap() error { return e.Err }
