package imagesrc

import (
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
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
		kind := Damaged
		if errors.Is(err, zip.ErrFormat) {
			kind = Truncated
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
		return &Error{Kind: UnsupportedEntry, Format: FormatZip, Err: fmt.Errorf("zip entry %q is encrypted", f.Name)}
	}
	s.meter.reset() // progress counts the entry's data, not the directory read
	rc, err := f.Open()
	switch {
	case errors.Is(err, zip.ErrAlgorithm):
		return &Error{Kind: UnsupportedEntry, Format: FormatZip,
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

// pickZipEntry returns the one entry that can be the image. Directories and
// the metadata archivers and download sites add are skipped; anything else
// counts, and more than one candidate is an error naming them all, since
// guessing which one to write is how the wrong card gets made.
func pickZipEntry(files []*zip.File) (*zip.File, error) {
	var cands []*zip.File
	for _, f := range files {
		if !isZipMetadata(f) {
			cands = append(cands, f)
		}
	}
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		return nil, &Error{Kind: Empty, Format: FormatZip,
			Err: fmt.Errorf("the zip archive holds no image (%d entries, all directories or metadata)", len(files))}
	}
	names := make([]string, len(cands))
	for i, f := range cands {
		names[i] = fmt.Sprintf("%q (%d bytes)", f.Name, f.UncompressedSize64)
	}
	return nil, &Error{Kind: Ambiguous, Format: FormatZip,
		Err: fmt.Errorf("the zip archive holds %d candidate images: %s", len(cands), strings.Join(names, ", "))}
}

// zipMetadataMax bounds what may be dismissed as a checksum or readme file:
// a large file is never assumed to be metadata, whatever its name.
const zipMetadataMax = 1 << 20

// zipMetadataExt are extensions of the small companion files that image
// downloads carry next to the image.
var zipMetadataExt = map[string]bool{
	".txt": true, ".md": true, ".sha1": true, ".sha256": true, ".sha512": true, ".md5": true,
	".sig": true, ".asc": true, ".gpg": true, ".bmap": true, ".json": true, ".xml": true,
	".html": true, ".pdf": true, ".url": true,
}

func isZipMetadata(f *zip.File) bool {
	name := f.Name
	base := path.Base(name)
	switch {
	case strings.HasSuffix(name, "/") || f.FileInfo().IsDir():
		return true
	case strings.HasPrefix(name, "__MACOSX/") || strings.Contains(name, "/__MACOSX/"):
		return true
	case base == ".DS_Store" || base == "Thumbs.db" || strings.HasPrefix(base, "._"):
		return true
	case f.UncompressedSize64 == 0:
		return true
	}
	return f.UncompressedSize64 <= zipMetadataMax && zipMetadataExt[strings.ToLower(path.Ext(base))]
}
