package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// A tar archive holding one image (plain, or inside any of the formats
// here: .tar.gz, .tar.xz, .tar.zst, .tar.lz4, a .tar in a zip or 7z) is
// streamed: its headers are read as they come and the image member's data
// goes straight to the card, with no temporary file. A tar has no
// directory, so whether another candidate image follows the first is
// known at its end; then the stream fails before the write's first
// transfer, which is the promise (a plain tar in a file is scanned first,
// so that is refused before anything is written). What follows the
// archive's end in the outer container is read too, so that its checksum
// (gzip's CRC, xz's checks) is verified.

// tarEntryDecoder delivers the image member's data, then reads the rest of
// the archive.
type tarEntryDecoder struct {
	tr    *tar.Reader
	outer io.Reader // what the tar reader reads: drained after the archive
	name  string
	done  bool
}

func (t *tarEntryDecoder) Read(p []byte) (int, error) {
	if t.done {
		return 0, io.EOF
	}
	n, err := t.tr.Read(p)
	if err == io.EOF {
		t.done = true
		err = t.finish()
		if err == nil {
			err = io.EOF
		}
	}
	return n, err
}

// finish reads the archive's remaining headers (refusing a second image)
// and the outer container to its end.
func (t *tarEntryDecoder) finish() error {
	for {
		h, err := t.tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return tarError(err)
		}
		if e := tarArchiveEntry(h); !isMetadata(e) {
			return ambiguous(FormatTar, []string{
				fmt.Sprintf("%q", t.name), fmt.Sprintf("%q (%d bytes)", e.name, e.size)})
		}
	}
	_, err := io.Copy(io.Discard, t.outer)
	return err
}

// tarArchiveEntry is what pickEntry needs of a tar header: anything but a
// regular file (a directory, a link, a device) holds no image.
func tarArchiveEntry(h *tar.Header) archiveEntry {
	regular := h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeGNUSparse || h.Typeflag == '\x00'
	return archiveEntry{name: h.Name, size: uint64(max(h.Size, 0)), dir: !regular}
}

// tarError turns archive/tar's complaint into one Source tells apart.
func tarError(err error) error {
	if errors.Is(err, tar.ErrHeader) {
		return fmt.Errorf("damaged tar header: %w", err)
	}
	return err
}

// openTar makes the image member of the tar archive the decoded data
// begins with the image: its first bytes (head) were read, and the rest
// is s.dec's. outerDone says s.dec has no more (the archive is all in
// head). ra, when s is a plain tar in a file, lets the archive be scanned
// first for the image and any second one.
func (s *Source) openTar(head []byte, outerDone bool, ra io.ReaderAt, size int64) error {
	if s.Format == FormatTar && ra != nil {
		if err := scanTar(io.NewSectionReader(ra, 0, size)); err != nil {
			return err
		}
	}
	var rest io.Reader = eofReader{}
	if !outerDone {
		rest = s.exactDecoded()
	}
	outer := io.MultiReader(bytes.NewReader(head), rest)
	tr := tar.NewReader(outer)
	var entries []archiveEntry
	for {
		h, err := tr.Next()
		switch {
		case err == io.EOF:
			_, err := pickEntry(FormatTar, entries) // none: ErrEmpty
			return err
		case err != nil:
			return s.classify(tarError(err))
		}
		e := tarArchiveEntry(h)
		entries = append(entries, e)
		if isMetadata(e) {
			continue
		}
		s.dec = &tarEntryDecoder{tr: tr, outer: outer, name: h.Name}
		if s.Entry != "" {
			s.Entry += "/" + h.Name
		} else {
			s.Entry = h.Name
		}
		s.Size, s.SizeExact, s.decoded, s.err = h.Size, true, 0, nil
		return nil
	}
}

// scanTar refuses, before anything is written, a tar file that holds no
// image or several: its headers are read and its members' data seeked
// over.
func scanTar(r io.ReadSeeker) error {
	tr := tar.NewReader(r)
	var entries []archiveEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			// Damage is said where the stream finds it, with its offset.
			return nil
		}
		entries = append(entries, tarArchiveEntry(h))
	}
	_, err := pickEntry(FormatTar, entries)
	return err
}

// exactDecoded is s.dec with the size its container states checked, as
// readDecoded checks it of an image, for a decoder whose data is a tar.
func (s *Source) exactDecoded() io.Reader {
	if !s.SizeExact {
		return s.dec
	}
	return &exactReader{r: s.dec, size: s.Size, n: s.decoded}
}

// exactReader checks that r delivers size bytes, n of which were read.
type exactReader struct {
	r       io.Reader
	size, n int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if e.n+int64(n) > e.size {
		n = int(e.size - e.n)
		err = fmt.Errorf("%w: %d bytes", errDecodedLong, e.size)
	}
	e.n += int64(n)
	if err == io.EOF && e.n < e.size {
		err = fmt.Errorf("%w: got %d of %d bytes: %w", errDecodedShort, e.n, e.size, io.ErrUnexpectedEOF)
	}
	return n, err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
