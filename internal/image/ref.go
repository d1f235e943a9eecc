package image

import (
	"fmt"
	"os"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/shown"
)

// Ref names an image and says how it is found, read and trusted: a file,
// standard input, an http(s) URL (through a cache, or not), or a
// catalog's entry, and the checksum and signature it must have. It is what
// a session's configuration says of its image; Open decides the rest.
type Ref struct {
	// Path is a path, an http(s) URL, or "-" for standard input; "" when
	// OS names the image.
	Path string
	// Stdin is what Path "-" reads; nil: the process's standard input.
	Stdin *os.File
	// Catalog is the os_list (an http(s) URL or a file) OS is looked up
	// in; OS names one of its entries (exactly, or the start of only one
	// entry's name), whose URL is then the image.
	Catalog, OS string
	// SHA256 is the image file's SHA-256 as its publisher gives it (hex):
	// checked as the image streams, before a card may boot it. "" looks
	// for it beside the image (IMAGE.sha256, SHA256SUMS, ...) unless
	// NoSHA256.
	SHA256   string
	NoSHA256 bool
	// SHA256Keyring is a file of the publisher's OpenPGP public keys
	// (gpg --export, armoured or binary): a checksum list found beside
	// the image, and a block map, must then carry a good signature by one
	// of them, clear-signed or detached (LIST.gpg, .sig, .asc, .sign), and
	// an image no such list gives a sum is refused (*NoSignedSumError).
	// With NoSHA256 or a SHA256 given there is no list for it to check:
	// refused (ErrChecksumConflict).
	SHA256Keyring string
	// SHA256Fingerprint, with SHA256Keyring, narrows it to the one key
	// with this fingerprint, as bmaptool's --fingerprint does.
	SHA256Fingerprint string
	// HTTP is how an image at an http(s) URL, and the files beside it, are
	// read (timeouts, stall floor, retries); the zero value is httpsrc's
	// defaults.
	HTTP httpsrc.Options
	// Cache is a directory that keeps images read from URLs (dlcache):
	// reused when their SHA-256 or the server's validator says they are
	// the image, resumed from a .part an earlier run left; "": none.
	// CacheMax bounds it (0: only the free space, which it never fills).
	Cache    string
	CacheMax int64
}

// The settings of a Ref an error may be about (*failure.SettingError):
// the caller names them in its own words (the CLI, by its flags).
const (
	SettingSHA256      failure.Setting = "sha256"
	SettingKeyring     failure.Setting = "sha256 keyring"
	SettingFingerprint failure.Setting = "sha256 fingerprint"
	// SettingKeyringNoSHA256 is a keyring named together with no checksum
	// looked for; SettingKeyringSHA256 together with a sum given.
	SettingKeyringNoSHA256 failure.Setting = "sha256 keyring and no sha256"
	SettingKeyringSHA256   failure.Setting = "sha256 keyring and sha256"
	// SettingCache is the directory of images read from URLs.
	SettingCache failure.Setting = "cache"
	// SettingCatalog is the catalog an image is looked up in, SettingOS
	// the entry (Ref.OS) that names it.
	SettingCatalog failure.Setting = "catalog"
	SettingOS      failure.Setting = "os"
)

// IsURL says ref is an image at an http(s) URL.
func IsURL(ref string) bool { return httpsrc.IsURL(ref) }

// Shown is an image's path or URL as messages show it: a URL without its
// query (a signed URL's token) or password (shown.URL).
func Shown(ref string) string {
	if IsURL(ref) {
		return shown.URL(ref)
	}
	return ref
}

// Named is an image as a message names it: Shown, and "standard input"
// for "-".
func Named(ref string) string {
	if ref == "-" {
		return "standard input"
	}
	return Shown(ref)
}

// ReadError is an image that could not be opened or read as a session
// needs it, wrapping what its source said (the file, the server, a
// decoder, a block map's checker).
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Class is the cause's when it says one, else Image.
func (e *ReadError) Class() failure.Class { return failure.Within(failure.Image, e.Err) }

// ErrFingerprintAlone: a fingerprint names a key of a keyring, and none
// was given.
var ErrFingerprintAlone = failure.New(failure.Usage, "a key's fingerprint picks one key of a keyring, and no keyring was given")

// ErrChecksumConflict: the checksum choices contradict each other (a
// keyring with no checksum looked for, or with a sum given).
var ErrChecksumConflict = failure.New(failure.Usage, "contradictory checksum options")

// ErrNoCatalog: an image is named by a catalog entry and no catalog was
// given.
var ErrNoCatalog = failure.New(failure.Usage, "an image named by a catalog entry needs a catalog (an os_list URL or file)")

// ErrImageAndOS: an image was given both as a file or URL and as a
// catalog entry.
var ErrImageAndOS = failure.New(failure.Usage, "an image is named by a file or URL or by a catalog entry, not both")

// ErrReadOnce: the image is to be read again from its start (ReadAgain),
// and standard input, a pipe or a FIFO can be read only once.
var ErrReadOnce = failure.New(failure.Usage, "standard input or a pipe can be read only once")

// NotKeptError is an image at a URL to be read again from its start
// (ReadAgain) that no cache could keep: refused before it is read.
type NotKeptError struct{ Image string }

func (e *NotKeptError) Error() string {
	return fmt.Sprintf("%s could not be kept in the cache (said above), and it is read again from its start", e.Image)
}

// Class is Refused: nothing was read.
func (e *NotKeptError) Class() failure.Class { return failure.Refused }

// ChecksumArgError is a SHA-256 given (Ref.SHA256) that cannot be used;
// it comes as the *failure.SettingError of SettingSHA256.
type ChecksumArgError struct{ Err error }

func (e *ChecksumArgError) Error() string { return e.Err.Error() }
func (e *ChecksumArgError) Unwrap() error { return e.Err }

// Class is Usage.
func (e *ChecksumArgError) Class() failure.Class { return failure.Usage }

// checkSettings refuses, before anything is opened, checksum settings that
// contradict each other: a keyring with no checksum looked for, or with a
// sum given. A sum given is checked as it is: there is no list whose
// signature a keyring could check, and a keyring read and then left
// unused would claim a check never made.
func (r Ref) checkSettings() error {
	switch {
	case r.SHA256Keyring != "" && r.NoSHA256:
		return &failure.SettingError{Setting: SettingKeyringNoSHA256,
			Err: fmt.Errorf("%w: the keyring checks the signature of the checksum list beside the image, which is not looked for", ErrChecksumConflict)}
	case r.SHA256Keyring != "" && r.SHA256 != "":
		return &failure.SettingError{Setting: SettingKeyringSHA256,
			Err: fmt.Errorf("%w: the keyring checks the signature of a checksum list, and the SHA-256 given comes from none", ErrChecksumConflict)}
	}
	return nil
}

// keys is the keyring the Ref names, narrowed to its fingerprint's key
// when one is given; nil for none.
func (r Ref) keys() (*Keyring, error) {
	if r.SHA256Keyring == "" {
		if r.SHA256Fingerprint != "" {
			return nil, &failure.SettingError{Setting: SettingFingerprint, Err: ErrFingerprintAlone}
		}
		return nil, nil
	}
	keys, err := ReadKeyring(r.SHA256Keyring)
	if err == nil && r.SHA256Fingerprint != "" {
		if keys, err = keys.Only(r.SHA256Fingerprint); err != nil {
			return nil, &failure.SettingError{Setting: SettingFingerprint, Err: err}
		}
	}
	if err != nil {
		return nil, &failure.SettingError{Setting: SettingKeyring, Err: err}
	}
	return keys, nil
}
