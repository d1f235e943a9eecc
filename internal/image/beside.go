package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/bmap"
)

// A block map goes with an image as its checksum list does: named, or
// found beside the image (or its URL) as bmaptool finds it, and signed by
// the publisher's keys when a keyring is given.

// maxBlockMap bounds a block map read from a URL: a map of a 64 GiB image
// with a checksum per range is megabytes.
const maxBlockMap = 64 << 20

// BlockMap is the block map that goes with the image, and where it was
// found: mapPath's (a file, or a URL beside a URL image), else IMAGE.bmap
// beside the image as bmaptool finds it, unless off; nil when there is
// none. Its OpenPGP signature is checked with the keyring the checksum
// lists are (Ref.SHA256Keyring), as bmaptool's --keyring does; without
// one, a map that carries a signature is used and said not to be checked.
// A map that does not fit the image is refused here when the image's size
// is known (and by the checker at the end of the stream otherwise).
func (o *Opened) BlockMap(ctx context.Context, mapPath string, off bool) (*bmap.Map, string, error) {
	read := o.readBeside(ctx)
	p := mapPath
	var data []byte
	var err error
	switch {
	case p == "" && !off && read != nil:
		p, data, err = findBlockMapURL(o.ref.Path, read)
	case p == "" && !off:
		p = findBlockMap(o.ref.Path)
	}
	if p == "" {
		return nil, "", nil
	}
	if data == nil && err == nil {
		if read != nil && IsURL(p) {
			data, err = read(p, maxBlockMap)
		} else {
			data, err = os.ReadFile(p)
		}
	}
	if err != nil {
		return nil, "", &BlockMapError{Path: p, Err: err, Unreadable: true}
	}
	if data, err = o.checkBlockMapSignature(p, data, read); err != nil {
		return nil, "", err
	}
	m, err := bmap.Parse(data)
	if err == nil && o.Source.SizeExact {
		err = m.CheckImageSize(o.Source.Size)
	}
	if err != nil {
		return nil, "", &BlockMapError{Path: p, Err: err}
	}
	return m, p, nil
}

// BlockMapBeside is the block map a write of one card would find beside
// the image ("" when none is); for a URL it asks the server, as that
// write would.
func (o *Opened) BlockMapBeside(ctx context.Context) string {
	if read := o.readBeside(ctx); read != nil {
		p, _, err := findBlockMapURL(o.ref.Path, read)
		if err != nil {
			return ""
		}
		return p
	}
	return findBlockMap(o.ref.Path)
}

// checkBlockMapSignature returns the map's text to parse (a clear-signed
// map's signed text) once its signature is checked, or said not to be.
func (o *Opened) checkBlockMapSignature(p string, data []byte, read ReadFunc) ([]byte, error) {
	if o.ref.SHA256Keyring == "" {
		text, clear := ClearSignedText(data)
		sig := SignatureBeside(p, read)
		switch {
		case clear:
			o.note("Block map " + p + " is PGP clear-signed; its signature was not checked: no keyring was given")
		case sig != "":
			o.note("Block map " + p + " has a signature beside it (" + sig + "); it was not checked: no keyring was given")
		}
		return text, nil
	}
	keys, err := o.ref.keys()
	if err != nil {
		return nil, err
	}
	text, sig, by, err := VerifySigned("block map", p, data, read, keys)
	if err != nil {
		return nil, &ReadError{Err: err}
	}
	if sig != "" {
		o.note(sig + " is a good signature of block map " + p + " by " + by.String())
	} else {
		o.note("Block map " + p + "'s signature was checked: a good signature by " + by.String())
	}
	return text, nil
}

// BlockMapError is a block map that cannot be used: unreadable (an image
// error) or not a map of this image (a refusal). Nothing was written.
type BlockMapError struct {
	Path       string
	Unreadable bool
	Err        error
}

func (e *BlockMapError) Error() string {
	return fmt.Sprintf("block map %s: %v; nothing was written", e.Path, e.Err)
}
func (e *BlockMapError) Unwrap() error { return e.Err }

// Class is Image for a map that cannot be read, else Refused: it is not
// a map of this image.
func (e *BlockMapError) Class() failure.Class {
	if e.Unreadable {
		return failure.Image
	}
	return failure.Refused
}

// findBlockMap looks for the map next to the image as bmaptool does:
// IMAGE.bmap, then with one suffix after another removed
// (os.img.xz: os.img.xz.bmap, os.img.bmap, os.bmap).
func findBlockMap(imageRef string) string {
	if imageRef == "-" {
		return ""
	}
	for p := imageRef; ; {
		if st, err := os.Stat(p + ".bmap"); err == nil && st.Mode().IsRegular() {
			return p + ".bmap"
		}
		ext := filepath.Ext(p)
		if ext == "" {
			return ""
		}
		p = p[:len(p)-len(ext)]
	}
}

// findBlockMapURL looks for the map beside a URL as findBlockMap does
// beside a file (the URL's query is not the map's), and reads the first
// one there; "" when none is.
func findBlockMapURL(imageRef string, read ReadFunc) (string, []byte, error) {
	u, err := url.Parse(imageRef)
	if err != nil {
		return "", nil, nil
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawPath = "", false, "", ""
	for p := u.Path; ; {
		v := *u
		v.Path = p + ".bmap"
		data, err := read(v.String(), maxBlockMap)
		if !errors.Is(err, fs.ErrNotExist) {
			return v.String(), data, err
		}
		ext := path.Ext(p)
		if ext == "" {
			return "", nil, nil
		}
		p = p[:len(p)-len(ext)]
	}
}
