// Package image opens OS images: it sniffs the container format from the
// bytes, decodes it (raw, gzip, xz, zstd, bzip2, lz4, zip, 7z, and a tar
// of one image, plain or in any of them), learns the decoded size where
// the container states it, tells a disc image (Disc), and reports damage
// with offsets; and it opens a session's image wherever it is (Open: a
// file, standard input, a URL read through the cache or not, a catalog's
// entry) with the checksum, signature and block map that go with it.
package image

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/usbflash/usbflash/internal/image/xzdec"
)

// Source is the image to write: Read yields the decoded image bytes, and the
// fields say what is known about it before reading. The fields are set by
// OpenFile/New and not changed afterwards.
//
// Read and Close are for one goroutine; CompressedRead and DecodedRead may be
// called from any.
type Source struct {
	// Format is the container the image came in, sniffed from its bytes.
	Format Format
	// Entry is the name of the decoded member of a zip, 7z or tar archive
	// (a tar's inside a zip or 7z: "outer.tar/inner.img"), else "".
	Entry string
	// Spooled names the temporary file a 7z stream was copied to before
	// it could be decoded (its header is at its end), "" for none.
	Spooled string
	// CompressedSize is the size of the input in bytes, -1 if unknown
	// (a pipe). For a raw image it equals Size.
	CompressedSize int64
	// Size is the decoded image size in bytes, -1 if unknown.
	Size int64
	// SizeExact says Size comes from the container's own bookkeeping (xz
	// index, zstd frame headers, zip directory, file size, or a tiny image
	// decoded whole while sniffing) and reading is checked against it. When false a non-negative Size is only a hint
	// (gzip's ISIZE trailer) for progress, and the image may differ.
	SizeExact bool
	// HasChecksum says the container carries a checksum of the image data
	// that reading verifies: gzip's and zip's CRC-32, bzip2's block CRCs,
	// xz's check unless it is "none", zstd's content checksum when its
	// frames have one (zstd -c writes it, --no-check and some encoders do
	// not). False for a raw image and for archives without one: then
	// only an outside checksum (a .sha256 file) tells a damaged image from
	// a good one. For a stream, later xz streams and zstd frames are taken
	// to be like the first.
	HasChecksum bool

	meter *inputMeter
	dec   io.Reader // decoder output
	// inputPos is how far a stream decoder has consumed its input, nil
	// when meter says it (raw, zip, parallel xz).
	inputPos func() int64
	zstd     zstdFrames // what the zstd frame headers say
	lz4      lz4Frames  // what the lz4 frame headers say
	decoded  int64
	// delivered counts the bytes Read returned, for DecodedRead.
	delivered atomic.Int64
	head      []byte // decoded bytes read ahead for the inner sniff, served first
	first     []byte // the first decoded bytes (up to sniffLen), never changed
	// probe is the first decoded bytes (up to discProbeLen) once Disc
	// read them.
	probe   []byte
	err     error // sticky: once set, every Read returns it
	closers []func() error

	// What OpenFile saw of the file, for CheckUnchanged and FileInfo.
	path string
	file *os.File // nil for standard input and New
	info fs.FileInfo

	sums sums // the input's and the decoded image's SHA-256 (sums.go)
	// sizeFrom is who stated Size when the container does not
	// (ExpectSize), "" when the container did.
	sizeFrom string
}

// decodeBufSize is the read-ahead between the input and a decoder. Large
// reads keep syscalls (and USB-stick sources) efficient; all decoders here
// buffer on top of an io.ByteReader without copying again.
const decodeBufSize = 256 << 10

// errSourceClosed is returned by Read after Close.
var errSourceClosed = errors.New("pipeline: read from closed source")

// Options are how OpenWith reads the image.
type Options struct {
	// HashStream hashes a stream (standard input or a path that is a
	// pipe: read once) with SHA-256 as it is read, and the decoded image
	// as it is delivered, for InputSHA256 and DecodedSHA256. A file needs
	// nothing: it is read again from its open descriptor.
	HashStream bool
	// Stdin is what the path "-" reads; nil: the process's standard input.
	Stdin *os.File
	// ReadAhead, when set, is called once by OpenStream, on its caller's
	// goroutine before the decoder reads past the sniffed bytes, when
	// the stream's decoder reads its input on the goroutine that reads
	// it (gzip, bzip2): a network body then reads ahead of it, so
	// that decoding overlaps the socket's reads. Not for a raw stream
	// (read straight into the engine's buffers: a read-ahead would add a
	// copy) nor zstd and xz (whose decoders read ahead on goroutines of
	// their own: a read-ahead would add a copy and handoffs, 6% more CPU
	// measured for zstd; xz level with and without it, 0.95x and 0.94x
	// the file in one run).
	ReadAhead func()
}

// OpenFile opens the image file at path, or standard input when path is
// "-", and sniffs its format from the first bytes. Every check that can
// fail early happens here: an unsupported container, a zip with no or
// several images, a truncated or damaged header (as *Error). A session
// opens its image with Open, which finds the file, URL or catalog entry
// and what it is trusted by, and comes here for a file.
func OpenFile(path string) (*Source, error) { return OpenWith(path, Options{}) }

// OpenWith is OpenFile with options.
func OpenWith(path string, opts Options) (*Source, error) {
	if path == "-" {
		return openStdin(opts)
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once, here
		}
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	size := seekableSize(f)
	var r io.Reader = f
	var ra io.ReaderAt
	closers := []func() error{f.Close}
	if size >= 0 {
		ra = f
		if m := mapFile(f, size); m != nil {
			ra = m
			closers = append(closers, m.Close)
		}
	}
	tee := streamTee(&r, size, opts)
	s, err := newSource(r, ra, size, path, nil)
	if err != nil {
		for _, c := range closers {
			c()
		}
		return nil, fmt.Errorf("image %s: %w", path, err)
	}
	s.sums.set(s, f, size, tee)
	s.closers = append(s.closers, closers...)
	s.path, s.file = path, f
	s.info, _ = f.Stat() // nil only if the descriptor broke since the size was read
	return s, nil
}

// OpenStream reads an image from a stream that is read once, in order (an
// HTTP body): size is its length when known, -1 when not, for progress and
// (of a raw image) the image's size; name is the file's name, for catching a
// file that is not what it is called ("" for none). With opts.HashStream it
// is hashed as it is read. Close closes r when r is an io.Closer. A zip
// archive, whose directory is at its end, is refused (ErrNeedsFile).
func OpenStream(r io.Reader, size int64, name string, opts Options) (*Source, error) {
	in := r
	tee := streamTee(&in, -1, opts)
	s, err := newSource(in, nil, size, name, opts.ReadAhead)
	if err != nil {
		return nil, err
	}
	if s.Format == FormatRaw && size >= 0 {
		// The stream's length is checked as it is read, as a file's is.
		s.Size, s.SizeExact = size, true
	}
	s.sums.set(s, nil, -1, tee)
	if c, ok := r.(io.Closer); ok {
		// Closed last, once no decoder reads it any more.
		s.closers = append([]func() error{c.Close}, s.closers...)
	}
	return s, nil
}

// openStdin reads standard input; when it is redirected from a regular file
// it is as good as a named file, sizes included. It is never closed.
func openStdin(opts Options) (*Source, error) {
	stdin := opts.Stdin
	if stdin == nil {
		stdin = os.Stdin
	}
	size := int64(-1)
	if fi, err := stdin.Stat(); err == nil && fi.Mode().IsRegular() {
		if pos, err := stdin.Seek(0, io.SeekCurrent); err == nil && pos == 0 {
			size = fi.Size()
		}
	}
	var ra io.ReaderAt
	if size >= 0 {
		ra = stdin
	}
	var r io.Reader = stdin
	tee := streamTee(&r, size, opts)
	s, err := newSource(r, ra, size, "", nil)
	if err != nil {
		return nil, fmt.Errorf("image on standard input: %w", err)
	}
	s.sums.set(s, stdin, size, tee)
	if fi, err := stdin.Stat(); err == nil && (fi.Mode().IsRegular() || fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0) {
		s.info = fi
	}
	return s, nil
}

// seekableSize is the size of a regular file or block device, -1 for pipes,
// sockets and anything else that must be read as a stream.
func seekableSize(f *os.File) int64 {
	fi, err := f.Stat()
	if err != nil {
		return -1
	}
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	if fi.Mode()&os.ModeDevice == 0 || fi.Mode()&os.ModeCharDevice != 0 {
		return -1
	}
	// Block devices report size 0 from stat; seeking to the end tells.
	end, err := f.Seek(0, io.SeekEnd)
	if _, err2 := f.Seek(0, io.SeekStart); err != nil || err2 != nil || end <= 0 {
		return -1
	}
	return end
}

// New reads an image from r. size is the input's length in bytes, -1
// when unknown. If r is also an io.ReaderAt and size >= 0, r is read only
// through ReadAt, from offset 0, and container indexes at the end of the data
// (xz index, zip directory, gzip trailer) supply sizes; otherwise r is read
// once, in order, and zip archives are refused. New does not close r.
func New(r io.Reader, size int64) (*Source, error) {
	ra, _ := r.(io.ReaderAt)
	if size < 0 {
		ra = nil
	}
	return newSource(r, ra, size, "", nil)
}

// newSource sniffs and opens the image; name is the file's name, "" for a
// stream, and only serves to catch a file that is not what it is called.
func newSource(r io.Reader, ra io.ReaderAt, size int64, name string, readAhead func()) (*Source, error) {
	s := &Source{CompressedSize: size, Size: -1, meter: &inputMeter{}}
	if size < 0 {
		s.CompressedSize = -1
	}
	var in io.Reader
	if ra != nil {
		ra = &bounceReaderAt{ra: ra}
		in = io.NewSectionReader(&meteredReaderAt{ra: ra, m: s.meter}, 0, size)
	} else {
		in = &meteredReader{r: r, m: s.meter}
	}
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(in, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, &Error{Kind: ErrUnreadable, Offset: int64(n), Err: fmt.Errorf("read the first bytes: %w", err)}
	}
	head = head[:n]
	sn := sniff(head)
	if sn == (sniffResult{format: FormatRaw}) && ra != nil && zipAfterPrefix(ra, size, head) {
		sn.format = FormatZip // read unmetered, like the zip directory itself
	}
	if err := checkNamedFormat(name, head, sn); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, &Error{Kind: ErrEmpty, Err: errors.New("the image is empty (0 bytes)")}
	}
	switch {
	case sn.truncated:
		return nil, &Error{Kind: ErrTruncated, Format: sn.truncatedAs, Offset: int64(n),
			Err: fmt.Errorf("only %d bytes, ending inside the %s signature: %w", n, sn.truncatedAs, io.ErrUnexpectedEOF)}
	case sn.unsupported != "":
		return nil, &Error{Kind: ErrUnsupported, Container: sn.unsupported,
			Err: fmt.Errorf("this is a %s, which usbflash does not decode", sn.unsupported)}
	}
	s.Format = sn.format
	s.first = head
	// The sniffed bytes are handed back in front of the rest of the input.
	stream := io.MultiReader(bytes.NewReader(head), in)

	if err := s.readHeaders(head, ra, size); err != nil {
		return nil, err
	}
	if readAhead != nil && (s.Format == FormatGzip || s.Format == FormatBzip2 || s.Format == FormatLz4) {
		readAhead()
	}
	if err := s.openDecoder(stream, ra, size); err != nil {
		s.Close()
		return nil, err
	}
	if ra != nil {
		s.probeSize(ra, size)
	}
	if err := s.sniffDecoded(ra, size); err != nil {

		s.Close()
		return nil, err
	}
	return s, nil
}

// readHeaders learns from the container's headers, before decoding,
// whether it carries a checksum and whether it needs something usbflash
// does not decode.
func (s *Source) readHeaders(head []byte, ra io.ReaderAt, size int64) error {
	switch s.Format {
	case FormatGzip, FormatBzip2, FormatZip:
		s.HasChecksum = true
	case FormatLz4:
		if ra != nil {
			s.lz4 = scanLz4(ra, size, false)
		} else {
			s.lz4 = scanLz4(bytes.NewReader(head), int64(len(head)), true)
		}
		s.HasChecksum = s.lz4.frames > 0 && s.lz4.checksum
	case FormatXz:
		// The stream header's check; openParallelXz reads every stream's.
		s.HasChecksum = len(head) > 7 && head[7]&0x0f != 0
	case FormatZstd:
		if ra != nil {
			s.zstd = scanZstd(ra, size, false)
		} else {
			s.zstd = scanZstd(bytes.NewReader(head), int64(len(head)), true)
		}
		s.HasChecksum = s.zstd.frames > 0 && s.zstd.checksum
		if s.zstd.feature != "" {
			return &Error{Kind: ErrUnsupportedFeature, Format: FormatZstd, Feature: s.zstd.feature, Offset: s.zstd.featureAt,
				Err: fmt.Errorf("zstd frame at compressed byte %d uses %s", s.zstd.featureAt, s.zstd.feature)}
		}
	}
	return nil
}

// openDecoder sets s.dec for s.Format.
func (s *Source) openDecoder(stream io.Reader, ra io.ReaderAt, size int64) error {
	switch s.Format {
	case FormatRaw, FormatTar:
		// A tar's member is found in the decoded bytes (sniffDecoded).
		s.dec = stream
		return nil
	case Format7z:
		if ra == nil {
			f, n, err := s.spool7z(stream)
			if err != nil {
				return err
			}
			ra, size = f, n
			if s.CompressedSize < 0 {
				s.CompressedSize = n
			}
		}
		return s.open7z(ra, size)
	case FormatZip:
		if ra == nil {
			return &Error{Kind: ErrNeedsFile, Format: FormatZip,
				Err: errors.New("a zip archive needs its directory at the end of the file, which a pipe cannot provide")}
		}
		return s.openZip(ra, size)
	case FormatXz:
		if ra != nil {
			if opened, err := s.openParallelXz(ra, size); opened {
				return err
			}
		}
	}
	dec, err := newStreamDecoder(s.Format, bufio.NewReaderSize(stream, decodeBufSize), s.meter.reached.Load)
	s.inputPos = dec.pos
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return s.classify(err)
	}
	s.dec = dec.Reader
	if dec.close != nil {
		s.closers = append(s.closers, dec.close)
	}
	return nil
}

// sniffDecoded reads the first decoded bytes and refuses images that are
// themselves a container (an .img.xz inside a zip, a .tar.gz): written raw
// they would not boot, and the user only finds out much later.
//
// Decoded data that is a tar archive (a .tar.gz, a plain .tar) is opened,
// and its one image member is the image: its first bytes are sniffed in
// turn (ra, size: the input, when it is a plain tar file).
func (s *Source) sniffDecoded(ra io.ReaderAt, size int64) error {
	if s.Format == FormatRaw {
		return nil // the outer sniff already looked at these very bytes
	}
	archive := s.Format
	for inTar := false; ; inTar = true {
		head := make([]byte, sniffLen)
		n := 0
		outerDone := false
		for n < len(head) {
			k, err := s.readDecoded(head[n:])
			n += k
			if err == io.EOF {
				s.err = io.EOF // delivered once head is drained
				// The whole image is decoded: its size is now a fact, which
				// lets a tiny image be refused before anything is written.
				s.Size, s.SizeExact = int64(n), true
				outerDone = true
				break
			}
			if err != nil {
				return err
			}
		}
		s.head = head[:n]
		s.first = s.head
		if n == 0 {
			return &Error{Kind: ErrEmpty, Format: s.Format, Err: fmt.Errorf("the %s archive decodes to an empty image", archive)}
		}
		inner := sniff(s.first)

		switch {
		case inner.format == FormatTar && !inTar:
			s.head, s.first = nil, nil
			if err := s.openTar(head[:n], outerDone, ra, size); err != nil {
				return err
			}
			archive = FormatTar
			continue
		case inner.unsupported != "":
			return &Error{Kind: ErrNotAnImage, Format: s.Format, Container: inner.unsupported, Decoded: int64(n),
				Err: fmt.Errorf("the %s archive holds a %s, not a disk image", archive, inner.unsupported)}
		case inner.format == FormatTar || inner.format == FormatZip || inner.format == Format7z:
			return &Error{Kind: ErrNotAnImage, Format: s.Format, Container: inner.format.String() + " archive", Decoded: int64(n),
				Err: fmt.Errorf("the %s archive holds a %s archive, not a disk image", archive, inner.format)}
		case inner.format != FormatRaw:
			return &Error{Kind: ErrNotAnImage, Format: s.Format, Decoded: int64(n),
				Err: fmt.Errorf("the %s archive holds %s-compressed data, not a disk image", archive, inner.format)}
		}
		return nil
	}
}

// Read reads decoded image bytes. A damaged or truncated archive yields a
// *SourceError, never io.EOF.
func (s *Source) Read(p []byte) (int, error) {
	if len(s.head) > 0 {
		n := copy(p, s.head)
		s.head = s.head[n:]
		s.delivered.Add(int64(n))
		s.sums.decoded(p[:n])
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.readDecoded(p)
	s.delivered.Add(int64(n))
	s.sums.decoded(p[:n])
	return n, err
}

// readDecoded reads from the decoder, counting output and turning decoder
// errors into *SourceError.
func (s *Source) readDecoded(p []byte) (int, error) {
	n, err := s.dec.Read(p)
	if s.SizeExact && s.decoded+int64(n) > s.Size {
		// Caught at the first byte too many, not at the decoder's end: a
		// writer stops reading at the declared size, and must learn there
		// that the archive is inconsistent.
		n = int(s.Size - s.decoded)
		s.decoded += int64(n)
		err = s.sizeError(errDecodedLong)
	} else {
		s.decoded += int64(n)
	}
	if err != nil {
		err = s.classify(err)
		s.err = err
	}
	return n, err
}

// classify turns what a decoder returned into what Read returns.
func (s *Source) classify(err error) error {
	var se *Error
	switch {
	case errors.As(err, &se):
		return err
	case err == io.EOF:
		if s.SizeExact && s.decoded < s.Size {
			return s.sizeError(errDecodedShort)
		}
		// All the input was consumed, whatever was read ahead or skipped
		// (a zip directory, an xz index): progress ends at the file size.
		if s.CompressedSize >= 0 {
			s.meter.advanceTo(s.CompressedSize)
		}
		return io.EOF
	}
	// An error from the input itself (a failing disk, a dropped network
	// share) is not damage in the archive; say which it is.
	if ioErr := s.meter.failure(); ioErr != nil {
		offset := s.meter.reached.Load()
		return &Error{Kind: ErrUnreadable, Format: s.Format, Offset: offset, Decoded: s.decoded,
			Err: fmt.Errorf("read %s input at byte %d: %w", s.Format, offset, ioErr)}
	}
	if s.Format == FormatRaw {
		return &Error{Kind: ErrUnreadable, Format: s.Format, Offset: s.decoded, Decoded: s.decoded,
			Err: fmt.Errorf("read image at byte %d: %w", s.decoded, err)}
	}
	if e := s.featureError(err); e != nil {
		return e
	}
	if s.Format == FormatZstd {
		// After the last frame: data that is no frame, not a cut frame.
		switch {
		case s.zstd.trailingAt >= 0 && (isTruncation(err) || errors.Is(err, zstd.ErrMagicMismatch)):
			return s.sourceError(false, &atError{s.zstd.trailingAt, fmt.Errorf("%w: %w", errTrailing("frame"), zstd.ErrMagicMismatch)})
		case errors.Is(err, zstd.ErrMagicMismatch) && s.inputPos != nil:
			// The decoder read the four bytes that are no frame magic.
			return s.sourceError(false, &atError{s.inputPos() - 4, fmt.Errorf("%w: %w", errTrailing("frame"), err)})
		}
	}
	return s.sourceError(isTruncation(err), err)
}

// featureError is the *Error for a decoder's refusal of a feature it does
// not decode, nil for other errors.
func (s *Source) featureError(err error) *Error {
	var xe *xzdec.Error
	switch {
	case errors.Is(err, xzdec.ErrUnsupported) && errors.As(err, &xe):
		feature := strings.TrimPrefix(xe.Err.Error(), xzdec.ErrUnsupported.Error()+": ")
		return &Error{Kind: ErrUnsupportedFeature, Format: s.Format, Feature: feature, Offset: xe.Offset, Decoded: s.decoded, Err: err}
	case errors.Is(err, zstd.ErrUnknownDictionary):
		offset := s.meter.reached.Load()
		if s.inputPos != nil {
			offset = s.inputPos()
		}
		return &Error{Kind: ErrUnsupportedFeature, Format: s.Format, Feature: "a dictionary", Offset: offset, Decoded: s.decoded, Err: err}
	}
	return nil
}

// sizeError reports decoded data that disagrees with the exact size: for an
// archive, damage; for a raw file, whose exact size is the file's at OpenFile
// (and which is read only up to it), a file cut short while it was read.
func (s *Source) sizeError(cause error) error {
	if s.sizeFrom != "" {
		// The archive decoded whole, as its own checks say; the size it
		// was measured against is someone else's.
		what := fmt.Sprintf("%d bytes", s.decoded)
		if cause == errDecodedLong {
			what = fmt.Sprintf("more than %d bytes", s.Size)
		}
		return &Error{Kind: ErrStatedSize, Format: s.Format, Offset: s.meter.reached.Load(), Decoded: s.decoded,
			Err: fmt.Errorf("the image decodes to %s, and %s says %d", what, s.sizeFrom, s.Size)}
	}
	if cause == errDecodedShort {
		if s.Format == FormatRaw {
			return &Error{Kind: ErrChanged, Format: s.Format, Offset: s.decoded, Decoded: s.decoded,
				Err: fmt.Errorf("image changed while it was being read: it was %d bytes when opened, and ended after %d", s.Size, s.decoded)}
		}
		return s.sourceError(true, fmt.Errorf("%w: got %d of %d bytes", cause, s.decoded, s.Size))
	}
	return s.sourceError(false, fmt.Errorf("%w: %d bytes", cause, s.Size))
}

func (s *Source) sourceError(truncated bool, err error) *Error {
	offset := s.meter.reached.Load() // for truncation: where the input ended
	if s.inputPos != nil && !truncated {
		offset = s.inputPos()
	}
	var at *atError
	if off, cause, ok := xzErrorOffset(err); ok {
		offset, err = off, cause
	} else if errors.As(err, &at) {
		offset = at.offset
	}
	kind := ErrDamaged
	if truncated {
		kind = ErrTruncated
	}
	return &Error{Kind: kind, Format: s.Format, Offset: offset, Decoded: s.decoded, Err: err}
}

// Head returns the first decoded bytes of the image (up to 512, fewer only
// when the image is shorter), for Describe. The caller must not modify them.
func (s *Source) Head() []byte { return s.first }

// DecodedRead is how many image bytes Read has produced so far, the
// progress of the image itself. Safe to call from any goroutine.
func (s *Source) DecodedRead() int64 { return s.delivered.Load() }

// CompressedRead is how many input bytes the decoder has consumed so far
// (for a raw image, the same as DecodedRead, plus the first bytes read ahead
// to sniff the format); at the end of the image it equals CompressedSize
// when that is known. Progress should count DecodedRead and show this beside
// it. Safe to call from any goroutine.
func (s *Source) CompressedRead() int64 { return s.meter.reached.Load() }

// Close releases the decoder and, for OpenFile, the file. Reads after Close
// fail.
func (s *Source) Close() error {
	var first error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil && first == nil {
			first = err
		}
	}
	s.closers = nil
	s.head = nil
	s.err = errSourceClosed
	return first
}

// checkNamedFormat refuses a file whose name promises a container its bytes
// are not: an HTML error page saved as image.img.xz would otherwise be
// written raw over the card's partition table. A file that is merely
// truncated inside the promised signature is left to the truncation check.
// A brotli stream has no signature, and an lzma_alone header only a
// structure that unusual encoders may stretch: a file named .br or .lzma
// whose bytes are recognisably nothing else is refused as what its name
// says.
func checkNamedFormat(name string, head []byte, sn sniffResult) error {
	want, ext, ok := namedFormat(name)
	if !ok || want.kept(sn) {
		return nil
	}
	what := Describe(head)
	if (want.container == containerBrotli || want.container == containerLzmaAlone) && what == describeUnknown {
		return &Error{Kind: ErrUnsupported, Container: want.container,
			Err: fmt.Errorf("named %s and its bytes are recognisably nothing else: taken as %s, which usbflash does not decode", ext, want)}
	}
	if len(head) > 0 && len(head) < sniffLen {
		what += fmt.Sprintf(" of %d bytes", len(head))
	}
	return &Error{Kind: ErrNotNamedFormat, Format: want.format, Container: want.container,
		Err: fmt.Errorf("named %s but its bytes are %s, not %s", ext, what, want)}
}

// FileInfo is what stat said of the image file when it was opened, for
// telling whether a target is the image itself (os.SameFile) or holds it.
// ok is false for a stream: New, or standard input that is not redirected
// from a regular file or block device.
func (s *Source) FileInfo() (fi fs.FileInfo, ok bool) { return s.info, s.info != nil }

// CheckUnchanged reports, as an *Error of Kind Changed, an image file
// that was modified, resized or replaced since OpenFile: what was written (and
// hashed for verification) is then not one image, and verifying against
// that hash would prove nothing. It stats the open file and the path again
// and compares size, modification time and identity. Call it after the last
// Read and before Close. Standard input and New have nothing to check.
func (s *Source) CheckUnchanged() error {
	if s.file == nil || s.info == nil {
		return nil
	}
	if m := s.info.Mode(); !m.IsRegular() && m&fs.ModeDevice == 0 {
		// A named pipe is read once and its times move as it is written
		// to: there is nothing to compare.
		return nil
	}
	changed := func(format string, a ...any) error {
		return &Error{Kind: ErrChanged, Format: s.Format, Offset: -1, Decoded: s.decoded,
			Err: fmt.Errorf("image changed while it was being written: "+format, a...)}
	}
	now, err := s.file.Stat()
	if err != nil {
		return changed("cannot stat the open file again: %w", err)
	}
	if d := describeChange(s.info, now); d != "" {
		return changed("%s", d)
	}
	byPath, err := os.Stat(s.path)
	switch {
	case err != nil:
		return changed("%s is no longer there (%w)", s.path, err)
	case !os.SameFile(s.info, byPath):
		return changed("%s was replaced by another file", s.path)
	}
	return nil
}

// describeChange says how the file described by now differs from was, ""
// when it does not. Block devices always stat as size 0; their size was
// checked by reading.
func describeChange(was, now fs.FileInfo) string {
	switch {
	case was.Size() != now.Size():
		return fmt.Sprintf("its size went from %d to %d bytes", was.Size(), now.Size())
	case !was.ModTime().Equal(now.ModTime()):
		return fmt.Sprintf("it was modified at %s, after it was opened", now.ModTime().Format("15:04:05.000"))
	}
	return ""
}
