package image

import (
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"

	"github.com/bodgit/sevenzip"
)

// open7z selects the single image entry of a 7z archive and decodes it
// (LZMA, LZMA2, and the other methods github.com/bodgit/sevenzip decodes;
// a solid archive's earlier members are decoded and dropped on the way).
// A 7z archive keeps its directory, and the methods that decode its
// streams, at its end: ra must reach it (a stream is spooled to a file
// first: spool7z).
func (s *Source) open7z(ra io.ReaderAt, size int64) error {
	zr, err := sevenzip.NewReader(&meteredReaderAt{ra: ra, m: s.meter}, size)
	if err != nil {
		// As with zip, the header sits at the very end, so an incomplete
		// download is what usually loses it; damage there fails its CRC.
		return &Error{Kind: ErrTruncated, Format: Format7z, Offset: size,
			Err: fmt.Errorf("cannot read the archive header at the end of the file: %w", err)}
	}
	entries := make([]archiveEntry, len(zr.File))
	for i, f := range zr.File {
		entries[i] = archiveEntry{name: f.Name, size: f.UncompressedSize, dir: f.FileInfo().IsDir()}
	}
	i, err := pickEntry(Format7z, entries)
	if err != nil {
		return err
	}
	f := zr.File[i]
	s.meter.reset() // progress counts the entry's data, not the header read
	rc, err := f.Open()
	if err != nil {
		var re *sevenzip.ReadError
		if errors.As(err, &re) && re.Encrypted {
			return &Error{Kind: ErrUnsupportedEntry, Format: Format7z, Err: fmt.Errorf("7z entry %q is encrypted", f.Name)}
		}
		return &Error{Kind: ErrUnsupportedEntry, Format: Format7z, Err: fmt.Errorf("7z entry %q: %w", f.Name, err)}
	}
	s.closers = append(s.closers, rc.Close)
	// The library checks its headers' CRCs, not the members': the
	// entry's CRC-32 is checked here, at its end, before the write's
	// first transfer.
	s.dec = &crcChecked{r: rc, h: crc32.NewIEEE(), want: f.CRC32, check: f.CRC32 != 0, name: f.Name}
	s.HasChecksum = f.CRC32 != 0
	s.Entry = f.Name
	s.Size, s.SizeExact = int64(min(f.UncompressedSize, 1<<63-1)), true
	return nil
}

// crcChecked checks a member's CRC-32 when its data ends.
type crcChecked struct {
	r     io.Reader
	h     hash.Hash32
	want  uint32
	check bool
	name  string
}

func (c *crcChecked) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	if err == io.EOF && c.check && c.h.Sum32() != c.want {
		err = fmt.Errorf("entry %q: its CRC-32 is %08x, the archive says %08x", c.name, c.h.Sum32(), c.want)
	}
	var re *sevenzip.ReadError
	if errors.As(err, &re) {
		err = re.Err // "sevenzip: read error: " says nothing the offset does not
	}
	return n, err
}

// spool7z copies a 7z stream into a
// temporary file, for its header at the end: the one format here that
// cannot be decoded as it arrives. The file is removed at once where the
// system allows (it lives on through the open descriptor) and otherwise
// when the source is closed; it takes the archive's size in the system's
// temporary directory ($TMPDIR).
func (s *Source) spool7z(in io.Reader) (*os.File, int64, error) {
	f, err := os.CreateTemp("", "usbflash-*.7z")
	if err != nil {
		return nil, 0, &Error{Kind: ErrNeedsFile, Format: Format7z,
			Err: fmt.Errorf("a 7z archive's header is at its end: a stream is copied to a temporary file first, which could not be made: %w", err)}
	}
	name := f.Name()
	removed := os.Remove(name) == nil
	s.closers = append(s.closers, func() error {
		err := f.Close()
		if !removed {
			os.Remove(name)
		}
		return err
	})
	n, err := io.Copy(f, in)
	if err != nil && s.meter.failure() != nil {
		// The stream failed, not the file.
		return nil, 0, &Error{Kind: ErrUnreadable, Format: Format7z, Offset: n, Err: fmt.Errorf("read the 7z stream at byte %d: %w", n, err)}
	}
	if err != nil {
		return nil, 0, &Error{Kind: ErrNeedsFile, Format: Format7z,
			Err: fmt.Errorf("a 7z archive's header is at its end: a stream is copied to a temporary file first (%s), which failed after %d bytes: %w", name, n, err)}
	}
	s.Spooled = name
	return f, n, nil
}
