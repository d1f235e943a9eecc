package image

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"os"
	"sync"
)

// A Source's SHA-256s, for checking a download against its publisher's
// checksum: of the input as it is (what SHA256SUMS lists for os.img.xz)
// and of the decoded image (what some publishers list instead). A file is
// read again from the descriptor OpenFile holds, never by its path, which may
// name something else by then or be a pipe; a stream is read once, so it
// is hashed as the decoder reads it (Options.HashStream), and nothing is
// taken from the decoder.

// ErrNotHashed: the image is a stream opened without Options.HashStream.
var ErrNotHashed = errors.New("the image is a stream that was not hashed as it was read")

// errNotEnded: a stream's sums are known once it was read to its end.
var errNotEnded = errors.New("the image stream was not read to its end")

// sums is what a Source keeps for its SHA-256s.
type sums struct {
	file io.ReaderAt // the input, read again for its sums; nil for a stream
	size int64
	tee  *teeHash  // a stream's input, hashed as read; nil without HashStream
	out  hash.Hash // the decoded image as delivered: a compressed stream's
	raw  bool      // the input is the image
}

// teeHash hashes a stream's bytes as they pass, each once, whoever reads
// them (the sniff, the decoder, or the drain at the end).
type teeHash struct {
	r   io.Reader
	mu  sync.Mutex // a decoder may read on its own goroutine
	h   hash.Hash
	sum string // once the stream was drained
}

func (t *teeHash) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.mu.Lock()
	t.h.Write(p[:n])
	t.mu.Unlock()
	return n, err
}

// finish reads what the decoder left of the stream (xz's padding, data
// past the container's end: the file's bytes all the same) and returns
// the stream's SHA-256.
func (t *teeHash) finish(ctx context.Context) (string, error) {
	if t.sum != "" {
		return t.sum, nil
	}
	buf := make([]byte, 256<<10)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		_, err := t.Read(buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sum = hex.EncodeToString(t.h.Sum(nil))
	return t.sum, nil
}

// streamTee puts a hash between a stream and its decoder when opts ask
// for one; a file (size known) needs none.
func streamTee(r *io.Reader, size int64, opts Options) *teeHash {
	if !opts.HashStream || size >= 0 {
		return nil
	}
	t := &teeHash{r: *r, h: sha256.New()}
	*r = t
	return t
}

// set records, once the format is known, how s's sums are found.
func (m *sums) set(s *Source, f *os.File, size int64, tee *teeHash) {
	if size >= 0 {
		m.file, m.size = f, size
	}
	m.tee, m.raw = tee, s.Format == FormatRaw
	if tee != nil && !m.raw {
		m.out = sha256.New()
	}
}

// decoded hashes image bytes Read delivers, when they must be.
func (m *sums) decoded(p []byte) {
	if m.out != nil {
		m.out.Write(p)
	}
}

// Ended says Read has delivered the whole image (returned io.EOF).
func (s *Source) Ended() bool { return s.err == io.EOF && len(s.head) == 0 }

// Stream says the input is read once (standard input or a pipe): its sums
// are known only once Read reached its end.
func (s *Source) Stream() bool { return s.sums.file == nil }

// InputSHA256 is the SHA-256 of the input as it is, compressed or not:
// what sha256sum says of the file. A file's is read again from its open
// descriptor, from any goroutine at any time before Close; a stream's
// (Options.HashStream) once Read returned io.EOF, from the goroutine that
// read it or after it.
func (s *Source) InputSHA256(ctx context.Context) (string, error) {
	switch {
	case s.sums.file != nil:
		return hashReader(ctx, io.NewSectionReader(s.sums.file, 0, s.sums.size))
	case s.sums.tee == nil:
		return "", ErrNotHashed
	case !s.Ended():
		return "", errNotEnded
	}
	return s.sums.tee.finish(ctx)
}

// DecodedSHA256 is the SHA-256 of the decoded image. For a compressed
// file it decodes the file again from its open descriptor (as long as a
// decode takes); for a stream it is what Read delivered, once it returned
// io.EOF. For a raw image it is InputSHA256.
func (s *Source) DecodedSHA256(ctx context.Context) (string, error) {
	switch {
	case s.sums.raw:
		return s.InputSHA256(ctx)
	case s.sums.file != nil:
		again, err := New(io.NewSectionReader(s.sums.file, 0, s.sums.size), s.sums.size)
		if err != nil {
			return "", err
		}
		defer again.Close()
		return hashReader(ctx, again)
	case s.sums.out == nil:
		return "", ErrNotHashed
	case !s.Ended():
		return "", errNotEnded
	}
	return hex.EncodeToString(s.sums.out.Sum(nil)), nil
}

// hashReader is the SHA-256 of what r yields, stopping early when ctx is
// done.
func hashReader(ctx context.Context, r io.Reader) (string, error) {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
	}
}
