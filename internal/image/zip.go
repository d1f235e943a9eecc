package image

import (
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/klauspost/compress/zip"
	"github.com/klauspost/compress/zstd"
)

// zipMethodBzip2 is APPNOTE's method 12; archive/zip registers only store
// and deflate.
const zipMethodBzip2 = 12

// openZip selects the single image entry of a zip archive and decodes it.
func (s *Source) openZip(ra io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(&meteredReaderAt{ra: ra, m: s.meter}, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // names are never used as paths here
		// The directory sits at the very end, so an incomplete download
		// is what usually loses it.
		kind := ErrDamaged
		if errors.Is(err, zip.ErrFormat) {
			kind = ErrTruncated
		}
		return &Error{Kind: kind, Format: FormatZip, Offset: size,
			Err: fmt.Errorf("cannot read the archive directory at the end of the file: %w", err)}
	}
	zr.RegisterDecompressor(zipMethodBzip2, func(r io.Reader) io.ReadCloser {
		return io.NopCloser(bzip2.NewReader(r))
	})
	zr.RegisterDecompressor(zstd.ZipMethodWinZip, zstd.ZipDecompressor(zstdOptions()...))

	f, err := pickZipEntry(zr.File)
	if err != nil {
		return err
	}
	if f.Flags&0x1 != 0 {
		return &Error{Kind: ErrUnsupportedEntry, Format: FormatZip, Err: fmt.Errorf("zip entry %q is encrypted", f.Name)}
	}
	s.meter.reset() // progress counts the entry's data, not the directory read
	rc, err := f.Open()
	switch {
	case errors.Is(err, zip.ErrAlgorithm):
		return &Error{Kind: ErrUnsupportedEntry, Format: FormatZip,
			Err: fmt.Errorf("zip entry %q uses compression method %d, which usbflash does not decode", f.Name, f.Method)}
	case err == io.EOF: // the entry's local header lies past the end
		return s.sourceError(true, fmt.Errorf("entry %q: %w", f.Name, io.ErrUnexpectedEOF))
	case err != nil:
		return s.sourceError(isTruncation(err), fmt.Errorf("entry %q: %w", f.Name, err))
	}
	s.closers = append(s.closers, rc.Close)
	s.dec = rc
	s.Entry = f.Name
	if f.UncompressedSize64 <= math.MaxInt64 {
		s.Size, s.SizeExact = int64(f.UncompressedSize64), true
	}
	return nil
}

// pickZipEntry returns the one entry that can be the image (pickEntry).
func pickZipEntry(files []*zip.File) (*zip.File, error) {
	entries := make([]archiveEntry, len(files))
	for i, f := range files {
		entries[i] = archiveEntry{name: f.Name, size: f.UncompressedSize64, dir: strings.HasSuffix(f.Name, "/") || f.FileInfo().IsDir()}
	}
	i, err := pickEntry(FormatZip, entries)
	if err != nil {
		return nil, err
	}
	return files[i], nil
}

// zipAfterPrefix reports whether a seekable input whose first bytes are no
// container is a zip archive after a prefix: a self-extractor's program (an
// .exe stub, a shell script, unzipsfx), which archive/zip reads past and
// the sniffer cannot see. Only the end of the file can tell, so the whole
// structure must agree: the end-of-central-directory record ends the file
// exactly, the directory lies right before it, and the first entry's local
// header is where the directory says, with offsets relative to the archive
// (cat stub archive.zip) or to the file (zip -A). A disk image could hold a
// zip as its last bytes, so data that starts like a disk (a boot sector
// signature, or zeros) is never taken for a self-extractor.
func zipAfterPrefix(ra io.ReaderAt, size int64, head []byte) bool {
	if len(head) < sniffLen || head[510] == 0x55 && head[511] == 0xaa || len(bytes.Trim(head, "\x00")) == 0 {
		return false
	}
	const eocdLen, maxComment = 22, 1<<16 - 1
	n := min(size, eocdLen+maxComment)
	tail := make([]byte, n)
	if _, err := ra.ReadAt(tail, size-n); err != nil {
		return false
	}
	at := func(off int64, sig string) bool {
		if off < 0 {
			return false
		}
		var b [4]byte
		_, err := ra.ReadAt(b[:], off)
		return err == nil && string(b[:]) == sig
	}
	for p := n - eocdLen; p >= 0; p-- {
		e := tail[p:]
		if string(e[:4]) != "PK\x05\x06" || int64(binary.LittleEndian.Uint16(e[20:])) != n-p-eocdLen {
			continue
		}
		entries := uint64(binary.LittleEndian.Uint16(e[10:]))
		cdSize := uint64(binary.LittleEndian.Uint32(e[12:]))
		cdOff := uint64(binary.LittleEndian.Uint32(e[16:]))
		dirEnd := size - n + p
		if entries == 0xffff || cdSize == 0xffffffff || cdOff == 0xffffffff {
			// Zip64: its end record, 56 bytes, then its 20-byte locator.
			dirEnd -= 20 + 56
			var z [56]byte
			if !at(size-n+p-20, "PK\x06\x07") || !at(dirEnd, "PK\x06\x06") {
				return false
			}
			if _, err := ra.ReadAt(z[:], dirEnd); err != nil {
				return false
			}
			entries = binary.LittleEndian.Uint64(z[32:])
			cdSize = binary.LittleEndian.Uint64(z[40:])
			cdOff = binary.LittleEndian.Uint64(z[48:])
		}
		if entries == 0 || cdSize < 46 || cdSize > uint64(dirEnd) || cdOff > uint64(dirEnd)-cdSize {
			return false
		}
		base := dirEnd - int64(cdSize) - int64(cdOff) // where offset 0 of the archive is
		var cd [46]byte
		if _, err := ra.ReadAt(cd[:], base+int64(cdOff)); err != nil || string(cd[:4]) != "PK\x01\x02" {
			return false
		}
		local := int64(binary.LittleEndian.Uint32(cd[42:]))
		return local == 0xffffffff || at(base+local, "PK\x03\x04")
	}
	return false
}
