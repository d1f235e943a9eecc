package image

import (
	"fmt"
	"path"
	"strings"
)

// archiveEntry is what choosing the image needs of an archive's member
// (zip, 7z, tar).
type archiveEntry struct {
	name string
	size uint64
	// dir is a directory or anything else that holds no file data (a
	// tar's links and devices).
	dir bool
}

// pickEntry returns the index of the one entry of an archive of format f
// that can be the image. Directories and the metadata archivers and
// download sites add are skipped; anything else counts, and more than one
// candidate is an error naming them all, since guessing which one to write
// is how the wrong card gets made.
func pickEntry(f Format, entries []archiveEntry) (int, error) {
	var cands []int
	for i, e := range entries {
		if !isMetadata(e) {
			cands = append(cands, i)
		}
	}
	switch len(cands) {
	case 1:
		return cands[0], nil
	case 0:
		return -1, &Error{Kind: ErrEmpty, Format: f,
			Err: fmt.Errorf("the %s archive holds no image (%d entries, all directories or metadata)", f, len(entries))}
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = fmt.Sprintf("%q (%d bytes)", entries[c].name, entries[c].size)
	}
	return -1, ambiguous(f, names)
}

// ambiguous is the error for an archive of format f holding the candidate
// images named.
func ambiguous(f Format, names []string) error {
	return &Error{Kind: ErrAmbiguous, Format: f,
		Err: fmt.Errorf("the %s archive holds %d candidate images: %s", f, len(names), strings.Join(names, ", "))}
}

// metadataMax bounds what may be dismissed as a checksum or readme file:
// a large file is never assumed to be metadata, whatever its name.
const metadataMax = 1 << 20

// metadataExt are extensions of the small companion files that image
// downloads carry next to the image.
var metadataExt = map[string]bool{
	".txt": true, ".md": true, ".sha1": true, ".sha256": true, ".sha512": true, ".md5": true,
	".sig": true, ".asc": true, ".gpg": true, ".bmap": true, ".json": true, ".xml": true,
	".html": true, ".pdf": true, ".url": true,
}

// isMetadata reports whether an entry is something other than an image:
// a directory, an archiver's or a desktop's own file, an empty file, or a
// small companion file.
func isMetadata(e archiveEntry) bool {
	name := e.name
	base := path.Base(name)
	switch {
	case e.dir:
		return true
	case strings.HasPrefix(name, "__MACOSX/") || strings.Contains(name, "/__MACOSX/"):
		return true
	case base == ".DS_Store" || base == "Thumbs.db" || strings.HasPrefix(base, "._"):
		return true
	case e.size == 0:
		return true
	}
	return e.size <= metadataMax && metadataExt[strings.ToLower(path.Ext(base))]
}
