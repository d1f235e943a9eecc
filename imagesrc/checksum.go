package imagesrc

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A download's checksum: publishers give the SHA-256 of the file they
// serve, as IMAGE.sha256 beside it (Raspberry Pi OS), a SHA256SUMS list in
// its directory (Ubuntu, Debian), or IMAGE.sha (Armbian). It is of the
// file's bytes, compressed as they are, not of the image inside.

// ChecksumFile is a checksum found beside an image.
type ChecksumFile struct {
	Path string // the file it was read from
	Sum  string // lower-case hex
}

// ErrNoChecksumEntry: a checksum list beside the image names other files.
var ErrNoChecksumEntry = errors.New("no line for the image")

// FindChecksum looks beside image for its SHA-256 as publishers give it:
// IMAGE.sha256, IMAGE.sha256sum, IMAGE.sha, then SHA256SUMS in its
// directory. It returns nil when there is none (or image is "-"), and an
// error for a file that is there but cannot be read or holds no sum for
// image.
func FindChecksum(image string) (*ChecksumFile, error) {
	if image == "-" {
		return nil, nil
	}
	base := filepath.Base(image)
	candidates := []string{image + ".sha256", image + ".sha256sum", image + ".sha",
		filepath.Join(filepath.Dir(image), "SHA256SUMS")}
	for _, p := range candidates {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checksum file %s: %w", p, err)
		}
		sum, err := checksumFor(f, base, filepath.Base(p) != "SHA256SUMS")
		f.Close()
		if errors.Is(err, ErrNoChecksumEntry) && filepath.Base(p) == "SHA256SUMS" {
			continue // a list for other files in the same directory
		}
		if err != nil {
			return nil, fmt.Errorf("checksum file %s: %w", p, err)
		}
		return &ChecksumFile{Path: p, Sum: sum}, nil
	}
	return nil, nil
}

// checksumFor reads sha256sum's format ("HEX  NAME", "HEX *NAME", or a
// lone "HEX" when alone may be true) and returns name's sum.
func checksumFor(r io.Reader, name string, alone bool) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		sum, err := ParseSHA256(fields[0])
		if err != nil {
			return "", err
		}
		if len(fields) == 1 && alone {
			return sum, nil
		}
		if len(fields) >= 2 && filepath.Base(strings.TrimPrefix(fields[len(fields)-1], "*")) == name {
			return sum, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%w %s", ErrNoChecksumEntry, name)
}

// ParseSHA256 checks that s is a SHA-256 in hex and returns it in lower
// case.
func ParseSHA256(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%q is not a SHA-256 (64 hexadecimal digits)", s)
	}
	return hex.EncodeToString(b), nil
}

// FileSHA256 hashes the file at path, as sha256sum does, stopping early
// when ctx is done.
func FileSHA256(ctx context.Context, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// ChecksumMismatchError: the image file is not the file its publisher's
// checksum describes (a damaged or incomplete download, or another file).
type ChecksumMismatchError struct {
	Image string
	From  string // where the expected sum came from: --sha256 or a file
	Want  string
	Got   string
}

func (e *ChecksumMismatchError) Error() string {
	return fmt.Sprintf("%s has SHA-256 %s, but %s says %s", e.Image, e.Got, e.From, e.Want)
}
