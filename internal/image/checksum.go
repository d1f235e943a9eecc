package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/shown"
)

// A download's checksum: publishers give the SHA-256 of the file they
// serve, as IMAGE.sha256 beside it (Raspberry Pi OS), a SHA256SUMS list in
// its directory (Ubuntu, Debian), or IMAGE.sha (Armbian). It is mostly of
// the file's bytes, compressed as they are; some give the decoded image's
// (a line for os.img beside os.img.xz), which Decoded says. Lists are read
// as sha256sum -c reads them (sumlist.go).

// ChecksumFile is a checksum found beside an image.
type ChecksumFile struct {
	Path string // the list it was read from
	Sum  string // lower-case hex
	Line int    // its line in Path, 1-based
	// Name is the file the line names as written in the list, "" for a
	// sum alone on its line.
	Name string
	// Decoded: the line is for the decoded image (os.img beside
	// os.img.xz), not for the file.
	Decoded bool
	// Signed: the list is PGP clear-signed and the sum comes from its
	// signed text. Its signature was checked only when SignedBy is set.
	Signed bool
	// SignedBy is the key whose good signature the list carries, when a
	// keyring was given; SignatureFile is the detached signature it was
	// checked with, "" for a clear-signed list.
	SignedBy      *Signer
	SignatureFile string
}

// NoChecksumLine is a checksum list beside the image that has no line
// for it: the write goes on without it.
type NoChecksumLine struct {
	List  string
	Image string // the name looked for, relative to the list's directory
	// Elsewhere are the list's lines for files of the image's name in
	// other directories.
	Elsewhere []string
}

func (n NoChecksumLine) String() string {
	s := fmt.Sprintf("%s has no line for %s", n.List, n.Image)
	if len(n.Elsewhere) > 0 {
		s += fmt.Sprintf(" (its lines for %s are for files in other directories)", strings.Join(n.Elsewhere, ", "))
	}
	return s
}

// sumListName is the list of a directory's SHA-256s, as sha256sum's
// users name it.
const sumListName = "SHA256SUMS"

// FindChecksum looks beside image for its SHA-256 as publishers give it:
// IMAGE.sha256, IMAGE.sha256sum, IMAGE.sha, then SHA256SUMS in its
// directory, then SHA256SUMS in the directory above (a list covering
// arm64/ and armhf/), whose line must name DIR/IMAGE. It returns nil when
// there is none (or image is "-"), the lists beside the image that name
// other files only (the one above is another directory's list and is not
// mentioned), and an error for a list that cannot be used
// (*ChecksumListError) or gives the image two different sums
// (*ChecksumConflictError). With keys, the list the sum comes from must
// carry a good signature by one of them (*ChecksumSignatureError), and an
// image no list gives a sum (standard input among them) is refused
// (*NoSignedSumError): keys ask for an authenticated image, as gpgv's
// do. nil keys check no signature.
func FindChecksum(image string, keys *Keyring) (*ChecksumFile, []NoChecksumLine, error) {
	if image == "-" {
		if keys != nil {
			return nil, nil, &NoSignedSumError{Image: "standard input", Stdin: true}
		}
		return nil, nil, nil
	}
	base := filepath.Base(image)
	candidates := []sumCandidate{{image + ".sha256", base, true, false}, {image + ".sha256sum", base, true, false},
		{image + ".sha", base, true, false}, {filepath.Join(filepath.Dir(image), sumListName), base, false, false}}
	abs, err := filepath.Abs(image)
	if err == nil {
		if dir := filepath.Dir(abs); filepath.Dir(dir) != dir {
			candidates = append(candidates, sumCandidate{filepath.Join(filepath.Dir(image), "..", sumListName),
				filepath.Join(filepath.Base(dir), base), false, true})
		}
	} else {
		abs = ""
	}
	return findChecksum(candidates, abs, readBounded, keys)
}

// ReadFunc reads a file beside an image (a checksum list, its signature),
// at most limit bytes; a file that is not there is an error for which
// errors.Is(err, fs.ErrNotExist) holds.
type ReadFunc func(name string, limit int64) ([]byte, error)

// FindChecksumURL is FindChecksum for an image at an http(s) URL: the
// same files in the same order, beside the URL's path (its query is not
// theirs), read with read; a line naming an absolute path names no URL.
func FindChecksumURL(image string, read ReadFunc, keys *Keyring) (*ChecksumFile, []NoChecksumLine, error) {
	u, err := url.Parse(image)
	if err != nil {
		return nil, nil, fmt.Errorf("image %s: %w", image, err)
	}
	u.RawQuery, u.ForceQuery, u.Fragment = "", false, ""
	// The lists are named as messages show them (a password replaced),
	// in what is found and in every error, and read with the password.
	at := func(p string) string {
		v := *u
		v.Path, v.RawPath = p, ""
		return shown.URL(v.String())
	}
	withPassword := func(name string, limit int64) ([]byte, error) {
		if v, err := url.Parse(name); err == nil && u.User != nil && v.Scheme == u.Scheme && v.Host == u.Host {
			v.User = u.User
			name = v.String()
		}
		return read(name, limit)
	}
	base := path.Base(u.Path)
	dir := path.Dir(u.Path)
	candidates := []sumCandidate{{at(u.Path + ".sha256"), base, true, false}, {at(u.Path + ".sha256sum"), base, true, false},
		{at(u.Path + ".sha"), base, true, false}, {at(path.Join(dir, sumListName)), base, false, false}}
	if dir != "/" {
		candidates = append(candidates, sumCandidate{at(path.Join(path.Dir(dir), sumListName)), path.Join(path.Base(dir), base), false, true})
	}
	return findChecksum(candidates, "", withPassword, keys)
}

// sumCandidate is a file that may hold an image's sum.
type sumCandidate struct {
	path, rel string
	sidecar   bool // named after the image: a sum alone is the image's
	above     bool
}

// findChecksum reads the candidates in order, as FindChecksum says.
func findChecksum(candidates []sumCandidate, abs string, read ReadFunc, keys *Keyring) (*ChecksumFile, []NoChecksumLine, error) {
	var passed []NoChecksumLine
	for _, c := range candidates {
		found, err := readChecksum(c.path, c.rel, abs, c.sidecar, read, keys)
		if c.above && found == nil {
			// Another directory's list: only a line naming the image
			// makes it the image's.
			var le *ChecksumListError
			var none *noLineError
			if errors.As(err, &le) || errors.As(err, &none) {
				continue
			}
		}
		var none *noLineError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.As(err, &none):
			passed = append(passed, none.note)
			continue
		case err != nil:
			return nil, passed, err
		}
		return found, passed, nil
	}
	if keys != nil {
		return nil, passed, &NoSignedSumError{Image: candidates[0].rel, Passed: passed}
	}
	return nil, passed, nil
}

// NoSignedSumError is an image for which the caller's keys were given and
// no checksum list beside it gives a sum: there is none, or none has a
// line for it. Nothing vouches for the image, so it is not trusted.
type NoSignedSumError struct {
	Image  string           // its name, as the lists would name it
	Passed []NoChecksumLine // the lists beside it, none with a line for it
	Stdin  bool             // the image is standard input: nothing lies beside it
}

func (e *NoSignedSumError) Error() string {
	switch {
	case e.Stdin:
		return "no signed SHA-256 for standard input: no checksum list lies beside a stream"
	case len(e.Passed) == 0:
		return fmt.Sprintf("no signed SHA-256 for %s: no checksum list lies beside it (%s.sha256, %s.sha256sum, %s.sha or %s)",
			e.Image, e.Image, e.Image, e.Image, sumListName)
	}
	lines := make([]string, len(e.Passed))
	for i, p := range e.Passed {
		lines[i] = p.String()
	}
	return fmt.Sprintf("no signed SHA-256 for %s: %s", e.Image, strings.Join(lines, "; "))
}

// Class is Image: the image cannot be trusted as the keys ask.
func (e *NoSignedSumError) Class() failure.Class { return failure.Image }

// noLineError is a list without a line for the image, which FindChecksum
// passes over.
type noLineError struct{ note NoChecksumLine }

func (e *noLineError) Error() string { return e.note.String() }

// readChecksum reads the list at path for the file at rel (relative to
// the list's directory; abs is its absolute path, "" if unknown). A list
// with a line for the image is then checked against keys, if any, and a
// clear-signed one read again from the signed text its signature covers.
func readChecksum(path, rel, abs string, sidecar bool, read ReadFunc, keys *Keyring) (*ChecksumFile, error) {
	data, err := read(path, maxSumList)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, &ChecksumListError{List: path, Err: err}
	}
	list, err := parseSumList(bytes.NewReader(data))
	if err != nil {
		return nil, &ChecksumListError{List: path, Err: err}
	}
	found, err := list.find(path, rel, abs, sidecar)
	if err != nil || keys == nil {
		return found, err
	}
	signed, sigFile, by, err := verifyList(path, data, read, keys)
	if err != nil {
		return nil, err
	}
	if signed != nil {
		verified, err := parseSumList(bytes.NewReader(signed))
		if err != nil {
			return nil, &ChecksumListError{List: path, Err: err}
		}
		for i := range verified.lines {
			verified.lines[i].no += list.textLine - 1
		}
		verified.signed = true
		if found, err = verified.find(path, rel, abs, sidecar); err != nil {
			return nil, err
		}
	}
	found.SignedBy, found.SignatureFile = &by, sigFile
	return found, nil
}

// maxSumList bounds a checksum list, read whole for its signature.
const maxSumList = 64 << 20

// find is the sum the list, read from path, gives the file at rel.
func (l *sumList) find(path, rel, abs string, sidecar bool) (*ChecksumFile, error) {
	found := &ChecksumFile{Path: path, Signed: l.signed}
	lines := l.forPath(rel, abs, sidecar)
	if len(lines) == 0 {
		// Publishers that give the decoded image's sum name the image.
		if name, ok := decodedName(rel); ok {
			absName, _ := decodedName(abs)
			lines, found.Decoded = l.forPath(name, absName, false), true
		}
	}
	if len(lines) == 0 {
		return nil, &noLineError{NoChecksumLine{List: path, Image: rel, Elsewhere: l.elsewhere(rel)}}
	}
	ln, err := agreed(path, rel, lines)
	if err != nil {
		return nil, err
	}
	found.Sum, found.Line, found.Name = ln.sum, ln.no, ln.name
	return found, nil
}

// unwrapPath drops an *os.PathError's repetition of the path, which the
// list's error says once.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// decodedName is the name of the image a compressed file decodes to
// (os.img for os.img.xz): a stream's, whose name is its file's without
// the suffix. A zip's member has its own name, a tarball is no image.
func decodedName(name string) (string, bool) {
	p, ext, ok := namedFormat(name)
	switch {
	case !ok || p.container != "":
		return "", false
	case p.format == FormatXz && ext != ".txz", p.format == FormatGzip && ext != ".tgz",
		p.format == FormatZstd && ext != ".tzst", p.format == FormatBzip2 && ext != ".tbz2":
		return strings.TrimSuffix(name, ext), true
	}
	return "", false
}

// ChecksumListError is a checksum list beside the image that cannot be
// used: unreadable, or no checksum list at all (an error page saved under
// its name).
type ChecksumListError struct {
	List string
	Err  error
}

func (e *ChecksumListError) Error() string {
	return fmt.Sprintf("checksum list %s: %v", e.List, e.Err)
}
func (e *ChecksumListError) Unwrap() error { return e.Err }

// Class is Image: the image cannot be trusted as its publisher meant.
func (e *ChecksumListError) Class() failure.Class { return failure.Image }

// ChecksumConflictError is a list that gives the image two different
// SHA-256s: which one the publisher meant cannot be told.
type ChecksumConflictError struct {
	List, Image           string
	First, Second         int // line numbers
	FirstText, SecondText string
}

func (e *ChecksumConflictError) Error() string {
	return fmt.Sprintf("%s gives %s two different SHA-256s: line %d %s and line %d %s",
		e.List, e.Image, e.First, printable(e.FirstText), e.Second, printable(e.SecondText))
}

// Class is Image: the image cannot be trusted as its publisher meant.
func (e *ChecksumConflictError) Class() failure.Class { return failure.Image }

// ParseSHA256 checks that s is a SHA-256 in hex and returns it in lower
// case.
func ParseSHA256(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%q is not a SHA-256 (64 hexadecimal digits)", s)
	}
	return hex.EncodeToString(b), nil
}

// ChecksumMismatchError: the image file is not the file its publisher's
// checksum describes (a damaged or incomplete download, or another file),
// nor, when that was compared too, is the image it decodes to the one the
// checksum describes.
type ChecksumMismatchError struct {
	Image string
	From  string // where the expected sum came from: the caller's, or a list
	Want  string
	Got   string // the file's; "" when only the decoded image's was compared
	// GotDecoded is the decoded image's, "" when it was not compared (a
	// raw image is its own decoded image).
	GotDecoded string
}

// Class is Image: the file is not the one its publisher describes.
func (e *ChecksumMismatchError) Class() failure.Class { return failure.Image }

func (e *ChecksumMismatchError) Error() string {
	switch {
	case e.Got == "":
		return fmt.Sprintf("%s decodes to an image with SHA-256 %s, but %s says %s", e.Image, e.GotDecoded, e.From, e.Want)
	case e.GotDecoded != "":
		return fmt.Sprintf("%s has SHA-256 %s and decodes to an image with SHA-256 %s, but %s says %s",
			e.Image, e.Got, e.GotDecoded, e.From, e.Want)
	}
	return fmt.Sprintf("%s has SHA-256 %s, but %s says %s", e.Image, e.Got, e.From, e.Want)
}
