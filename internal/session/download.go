package session

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
)

// download checks the image against its publisher's SHA-256 before the
// first transfer is written. Publishers give the sum of the file they
// serve (os.img.xz) or of the image in it (os.img), and the user cannot
// always tell which: the file's is compared first and, when it does not
// match a compressed image, the decoded image's.
//
// A file is hashed from the descriptor the write reads, on its own
// goroutine while the cards are opened and written (it is the compressed
// file, a fraction of the image, and mostly in the page cache by then); a
// stream (standard input, a pipe) is hashed as the decoder reads it, once.
type download struct {
	want, from string
	// decodedOnly: the sum is the decoded image's (a list's line for
	// os.img beside os.img.xz).
	decodedOnly bool
	// fileOnly: the sum is the file's alone (a cache entry's name), never
	// the decoded image's.
	fileOnly bool
	// also are sums the image must have too, once it matched want: a
	// catalog's extract_sha256 beside its image_download_sha256, or a
	// catalog entry's sums beside the signed list a keyring asked for.
	also []sumCheck
	// signedBy is the key whose good signature the list carries; "":
	// none was checked.
	signedBy string

	// file is the input's sum, for a file hashed on its own goroutine
	// (done closes when it is known); a stream's is taken at the end.
	done    chan struct{}
	file    string
	fileErr error

	mu      sync.Mutex // the decoded image's sum, once computed
	decoded string
}

// sumCheck is one more SHA-256 a download must match: the file's, or
// with decoded the decoded image's, as from says.
type sumCheck struct {
	want, from string
	decoded    bool
}

// hashesFile says the file's own sum is compared, so a file is hashed
// from the start.
func (d *download) hashesFile() bool {
	if !d.decodedOnly {
		return true
	}
	for _, c := range d.also {
		if !c.decoded {
			return true
		}
	}
	return false
}

// findDownload is the sum the image is checked against (Config.SHA256, a
// catalog entry's, or a list beside the image or its URL: readBeside, nil
// for a file), nil for none, and what the lists beside the image that have
// no line for it say, for the session to pass on once. With a keyring the
// sum must come from a list its keys signed, also for a catalog's entry
// (whose own sums are then checked too): no such sum is an error.
func findDownload(cfg Config, readBeside image.ReadFunc, entry *catalog.Entry) (*download, []string, error) {
	fromCatalog := catalogDownload(cfg, entry)
	switch {
	case fromCatalog != nil && cfg.SHA256Keyring == "":
		return fromCatalog, nil, nil
	case cfg.SHA256 != "":
		sum, err := image.ParseSHA256(cfg.SHA256)
		if err != nil {
			return nil, nil, &failure.SettingError{Setting: SettingSHA256, Err: &ChecksumArgError{Err: err}}
		}
		return &download{want: sum, from: sumGiven}, nil, nil
	case cfg.NoSHA256:
		return nil, nil, nil
	}
	keys, err := readKeys(cfg)
	if err != nil {
		return nil, nil, err
	}
	var found *image.ChecksumFile
	var passed []image.NoChecksumLine
	if readBeside != nil {
		found, passed, err = image.FindChecksumURL(cfg.Image, readBeside, keys)
	} else {
		found, passed, err = image.FindChecksum(cfg.Image, keys)
	}
	var notes []string
	if !errors.As(err, new(*image.NoSignedSumError)) { // which says them itself
		for _, p := range passed {
			notes = append(notes, p.String())
		}
	}
	if err != nil {
		return nil, notes, &ImageError{Err: err}
	}
	if found == nil {
		return nil, notes, nil
	}
	d := &download{want: found.Sum, from: displayImage(found.Path), decodedOnly: found.Decoded}
	if found.Decoded {
		d.from = displayImage(found.Path) + "'s line for " + found.Name
	}
	if fromCatalog != nil {
		// The entry's sums are the ones it was chosen by: they hold too.
		d.also = append([]sumCheck{{want: fromCatalog.want, from: fromCatalog.from, decoded: fromCatalog.decodedOnly}}, fromCatalog.also...)
	}
	if found.SignedBy != nil {
		d.signedBy = found.SignedBy.String()
	}
	switch {
	case found.SignedBy != nil && found.SignatureFile != "":
		notes = append(notes, found.SignatureFile+" is a good signature of "+found.Path+" by "+found.SignedBy.String())
	case found.SignedBy != nil:
		notes = append(notes, found.Path+"'s signature was checked: a good signature by "+found.SignedBy.String())
	case found.Signed:
		notes = append(notes, found.Path+" is PGP signed; its signature was not checked")
	}
	return d, notes, nil
}

// readKeys is the keyring Config names, narrowed to its fingerprint's
// key when one is given; nil for none.
func readKeys(cfg Config) (*image.Keyring, error) {
	if cfg.SHA256Keyring == "" {
		if cfg.SHA256Fingerprint != "" {
			return nil, &failure.SettingError{Setting: SettingFingerprint, Err: ErrFingerprintAlone}
		}
		return nil, nil
	}
	keys, err := image.ReadKeyring(cfg.SHA256Keyring)
	if err == nil && cfg.SHA256Fingerprint != "" {
		if keys, err = keys.Only(cfg.SHA256Fingerprint); err != nil {
			return nil, &failure.SettingError{Setting: SettingFingerprint, Err: err}
		}
	}
	if err != nil {
		return nil, &failure.SettingError{Setting: SettingKeyring, Err: err}
	}
	return keys, nil
}

// ErrFingerprintAlone: a fingerprint names a key of a keyring, and none
// was given.
var ErrFingerprintAlone = failure.New(failure.Usage, "a key's fingerprint picks one key of a keyring, and no keyring was given")

// checkChecksum refuses, before anything is opened, checksum settings that
// contradict each other: a keyring with no checksum looked for, or with a
// sum given. A sum given is checked as it is: there is no list whose
// signature a keyring could check, and a keyring read and then left
// unused would claim a check never made.
func checkChecksum(cfg Config) error {
	switch {
	case cfg.SHA256Keyring != "" && cfg.NoSHA256:
		return &failure.SettingError{Setting: SettingKeyringNoSHA256,
			Err: fmt.Errorf("%w: the keyring checks the signature of the checksum list beside the image, which is not looked for", ErrChecksumConflict)}
	case cfg.SHA256Keyring != "" && cfg.SHA256 != "":
		return &failure.SettingError{Setting: SettingKeyringSHA256,
			Err: fmt.Errorf("%w: the keyring checks the signature of a checksum list, and the SHA-256 given comes from none", ErrChecksumConflict)}
	}
	return nil
}

// ErrChecksumConflict: the checksum choices contradict each other (a
// keyring with no checksum looked for, or with a sum given).
var ErrChecksumConflict = failure.New(failure.Usage, "contradictory checksum options")

// sumGiven is the from of a sum the caller gave (Config.SHA256).
const sumGiven = "the SHA-256 given"

// the names the sum: the one given, or the one in the list it is from.
func (d *download) the() string {
	if d.from == sumGiven {
		return sumGiven
	}
	return "the SHA-256 in " + d.from
}

// startDownload says what the image is checked against and, for a file,
// starts hashing it; a stream is hashed as it is read. src is the session's
// image, open until the session ends; as says when ("as it is written").
func (s *session) startDownload(ctx context.Context, d *download, src *image.Source, as string) {
	s.download = d
	if d == nil {
		s.emit(Checksum{State: ChecksumNone})
		return
	}
	if !src.Stream() && d.hashesFile() {
		d.done = make(chan struct{})
		go func() {
			defer close(d.done)
			d.file, d.fileErr = src.InputSHA256(ctx)
		}()
	}
	what := imageName(s.cfg.Image)
	if d.decodedOnly {
		what = "the image in " + what
	}
	s.emit(Note{Message: "Checking " + what + " against " + d.the() + " " + as})
	s.emit(Checksum{State: ChecksumChecking, From: d.from, SignedBy: d.signedBy})
}

// checkDownload compares the image with the sum, once src was read to its
// end (a file: at any time), and says which of the image file and the
// decoded image matched; nil when there is nothing to check.
func (s *session) checkDownload(ctx context.Context, src *image.Source) (string, error) {
	d := s.download
	if d == nil {
		return "", nil
	}
	matched, err := s.checkSum(ctx, d, src)
	if err != nil {
		return "", err
	}
	for _, c := range d.also {
		var got string
		if c.decoded {
			got, err = d.decodedSum(ctx, src)
		} else {
			got, err = d.fileSum(ctx, src)
		}
		if err != nil {
			return "", &ImageError{Err: err}
		}
		if got != c.want {
			mismatch := &image.ChecksumMismatchError{Image: imageName(s.cfg.Image), From: c.from, Want: c.want, Got: got}
			if c.decoded {
				mismatch.Got, mismatch.GotDecoded = "", got
			}
			return "", mismatch
		}
		what := "the image file"
		if c.decoded {
			what = "the decoded image"
		}
		matched += ", and " + what + " the SHA-256 in " + c.from
	}
	return matched, nil
}

// checkSum compares the image with d's own sum: the file's SHA-256 first
// and, when it differs from a compressed image's, the decoded image's.
func (s *session) checkSum(ctx context.Context, d *download, src *image.Source) (string, error) {
	var file string
	if !d.decodedOnly {
		var err error
		if file, err = d.fileSum(ctx, src); err != nil {
			return "", &ImageError{Err: err}
		}
		if file == d.want {
			return "The image file matches " + d.the(), nil
		}
	}
	mismatch := &image.ChecksumMismatchError{Image: imageName(s.cfg.Image), From: d.from, Want: d.want, Got: file}
	if src.Format == image.FormatRaw || d.fileOnly {
		return "", mismatch // the file is the image, or the sum is the file's
	}
	if !d.decodedOnly && !src.Stream() {
		s.emit(Note{Message: "The image file's SHA-256 is not " + d.the() + ": decoding it again to compare the image's"})
	}
	decoded, err := d.decodedSum(ctx, src)
	if err != nil {
		return "", &ImageError{Err: err}
	}
	switch {
	case decoded == d.want && d.decodedOnly:
		return "The decoded image matches " + d.the(), nil
	case decoded == d.want:
		return "The decoded image matches " + d.the() + " (a sum of the image, not of the " + src.Format.String() + " file)", nil
	}
	mismatch.GotDecoded = decoded
	return "", mismatch
}

// imageName is the image as a message names it.
func imageName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return displayImage(path)
}

// fileSum is the input's SHA-256: a file's from its goroutine, a stream's
// from what was read.
func (d *download) fileSum(ctx context.Context, src *image.Source) (string, error) {
	if d.done == nil {
		return src.InputSHA256(ctx)
	}
	select {
	case <-d.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return d.file, d.fileErr
}

// decodedSum is the decoded image's SHA-256, computed once for all the
// cards of a session.
func (d *download) decodedSum(ctx context.Context, src *image.Source) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.decoded != "" {
		return d.decoded, nil
	}
	sum, err := src.DecodedSHA256(ctx)
	if err != nil {
		return "", err
	}
	d.decoded = sum
	return sum, nil
}

// ChecksumArgError is a SHA-256 given (Config.SHA256) that cannot be
// used; it comes as the *failure.SettingError of SettingSHA256.
type ChecksumArgError struct{ Err error }

func (e *ChecksumArgError) Error() string { return e.Err.Error() }
func (e *ChecksumArgError) Unwrap() error { return e.Err }

// Class is Usage.
func (e *ChecksumArgError) Class() failure.Class { return failure.Usage }
