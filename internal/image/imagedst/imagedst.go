// Package imagedst writes image files: compressed as their name says
// (.zst, .gz, .xz, or raw) on every core, under a temporary name that is
// renamed to the real one only when the file is complete.
package imagedst

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/klauspost/pgzip"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/outfile"
)

// Formats, chosen by the file name's extension.
const (
	Zstd = "zstd"
	Gzip = "gzip"
	Xz   = "xz"
	Raw  = "raw"
)

// FormatOf names the format a file of this name is written in.
func FormatOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".zst", ".zstd":
		return Zstd
	case ".gz":
		return Gzip
	case ".xz":
		return Xz
	}
	return Raw
}

// PartSuffix is added to the name while the file is written.
const PartSuffix = ".part"

// ErrExists is returned by Create for a file that is already there.
var ErrExists = failure.New(failure.Refused, "already exists")

// File is an image file being written to its .part name.
type File struct {
	path, part string
	format     string
	f          *os.File
	counted    *countingWriter
	buffered   *bufio.Writer
	enc        io.WriteCloser // the compressor, or a no-op closer for raw

	mu       sync.Mutex
	finished bool // the stream is complete and synced, f is closed
	renamed  bool // the file has its real name
	kept     bool // Abort leaves the .part file
	gone     bool // the .part file was removed
}

// Create starts writing path (as path.part) in the format its name says,
// with as many compressing goroutines as the process may run. An existing
// path is refused with ErrExists unless overwrite is set; a stale .part
// from an earlier, interrupted run is replaced.
func Create(path string, overwrite bool) (*File, error) {
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return nil, fmt.Errorf("%s: %w", path, ErrExists)
		}
	}
	part := path + PartSuffix
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, &outfile.Error{Path: part, Op: outfile.OpCreate, Err: withoutPath(err)}
	}
	out := &File{path: path, part: part, format: FormatOf(path), f: f, counted: &countingWriter{w: f, path: part}}
	// Compressors write in small pieces: gather them into large writes.
	out.buffered = bufio.NewWriterSize(out.counted, 1<<20)
	workers := runtime.GOMAXPROCS(0)
	switch out.format {
	case Zstd:
		out.enc, err = newZstdWriter(out.buffered, workers)
	case Gzip:
		gz, gerr := pgzip.NewWriterLevel(out.buffered, pgzip.DefaultCompression)
		if gerr == nil {
			gerr = gz.SetConcurrency(1<<20, 2*workers)
		}
		out.enc, err = gz, gerr
	case Xz:
		out.enc = newXzWriter(out.buffered, workers)
	default:
		out.enc = nopCloser{out.buffered}
	}
	if err != nil {
		f.Close()
		os.Remove(part)
		return nil, fmt.Errorf("starting the %s compressor for %s: %w", out.format, path, err)
	}
	return out, nil
}

// Format is the format being written.
func (f *File) Format() string { return f.format }

// Path is the name the file gets when complete.
func (f *File) Path() string { return f.path }

// PartPath is the name the file has until it is complete.
func (f *File) PartPath() string { return f.part }

// Written is the bytes that reached the file so far (compressed).
func (f *File) Written() int64 { return f.counted.n }

// Write takes image bytes. A failure to write the file is an
// *outfile.Error naming it.
func (f *File) Write(p []byte) (int, error) { return f.enc.Write(p) }

// Finish ends the compressed stream and makes the .part file durable; it
// keeps its .part name until Rename.
func (f *File) Finish() error {
	err := f.enc.Close()
	if err == nil {
		err = f.buffered.Flush()
	}
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	f.mu.Lock()
	f.finished = true
	f.mu.Unlock()
	var oe *outfile.Error
	if err != nil && !errors.As(err, &oe) {
		err = &outfile.Error{Path: f.part, Op: outfile.OpWrite, Err: withoutPath(err)}
	}
	return err
}

// Rename gives a finished file its real name: only then does it look
// complete.
func (f *File) Rename() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.gone {
		return &outfile.Error{Path: f.part, Op: outfile.OpWrite, Err: errors.New("removed before it was complete")}
	}
	if err := os.Rename(f.part, f.path); err != nil {
		return &outfile.Error{Path: f.path, Op: outfile.OpWrite, Err: withoutPath(err)}
	}
	f.renamed = true
	return nil
}

// Commit finishes the file and gives it its real name. After a failure
// the .part file is removed.
func (f *File) Commit() error {
	err := f.Finish()
	if err == nil {
		err = f.Rename()
	}
	if err != nil {
		f.Abort()
	}
	return err
}

// Keep makes Abort and Discard leave the .part file where it is. It says
// whether the file is there to keep (Discard may have removed it first).
func (f *File) Keep() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kept = !f.gone
	return f.kept
}

// Kept says Keep was called on a file that was there.
func (f *File) Kept() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kept
}

// Abort removes the unfinished file. It does nothing after Rename or Keep,
// so it can be deferred.
func (f *File) Abort() {
	f.mu.Lock()
	finished := f.finished
	f.mu.Unlock()
	if !finished {
		f.enc.Close() // stops the compressing goroutines; the result is discarded
		f.f.Close()
	}
	f.Discard()
}

// Discard removes the .part file, unless the file was renamed or kept; a
// later Rename fails. It only removes a name, so it may run beside a Write
// under way, from another goroutine: what a second interrupt does. It
// says whether it removed the file.
func (f *File) Discard() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renamed || f.kept || f.gone {
		return false
	}
	f.gone = true
	os.Remove(f.part)
	return true
}

// WriteFile writes data to path through path.part and a rename, so path
// never holds a partial file.
func WriteFile(path string, data []byte) error {
	part := path + PartSuffix
	err := os.WriteFile(part, data, 0o644)
	if err == nil {
		err = os.Rename(part, path)
	}
	if err != nil {
		os.Remove(part)
		return &outfile.Error{Path: path, Op: outfile.OpWrite, Err: withoutPath(err)}
	}
	return nil
}

// withoutPath drops the file name from an *os.PathError or *os.LinkError:
// the outfile.Error names it.
func withoutPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// countingWriter counts what reaches the file, and names it in a failure.
type countingWriter struct {
	w    io.Writer
	path string
	n    int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		err = &outfile.Error{Path: c.path, Op: outfile.OpWrite, Err: withoutPath(err)}
	}
	return n, err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// newZstdWriter compresses independent frames in parallel: klauspost's
// streaming encoder overlaps one block with the input, no more, while
// EncodeAll on separate chunks uses every core. Every zstd decoder reads
// concatenated frames, and each frame states its size.
func newZstdWriter(dst io.Writer, workers int) (io.WriteCloser, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(workers), zstd.WithEncoderCRC(true))
	if err != nil {
		return nil, err
	}
	return newParallelWriter(dst, workers, 4<<20, func(src []byte, out []byte) ([]byte, error) {
		return enc.EncodeAll(src, out[:0]), nil
	}), nil
}
