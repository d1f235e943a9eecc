package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"

	"github.com/usbflash/usbflash/internal/failure"
)

// A checksum list's OpenPGP signature, checked when the caller gives the
// publisher's keys: a list is trusted then only when a key of the keyring
// signed it, clear-signed (Ubuntu's SHA256SUMS of old, Fedora's CHECKSUM)
// or with a detached signature beside it (Ubuntu's SHA256SUMS.gpg,
// Debian's SHA256SUMS.sign). Without keys, a clear-signed list's signed
// text is read and its signature is not checked (ChecksumFile.Signed says
// so). The checking is go-crypto's (ProtonMail's OpenPGP library).

// Keyring is the publisher's public keys, as gpg --export writes them
// (armoured or binary).
type Keyring struct {
	path     string
	entities openpgp.EntityList
}

// maxKeyring bounds a keyring file: a publisher's keys are kilobytes.
const maxKeyring = 64 << 20

// ReadKeyring reads an OpenPGP public keyring, armoured or binary.
func ReadKeyring(path string) (*Keyring, error) {
	data, err := readBounded(path, maxKeyring)
	if err != nil {
		return nil, &KeyringError{Path: path, Err: err}
	}
	var keys openpgp.EntityList
	if isArmoured(data) {
		keys, err = openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	} else {
		keys, err = openpgp.ReadKeyRing(bytes.NewReader(data))
	}
	if err != nil {
		return nil, &KeyringError{Path: path, Err: fmt.Errorf("is not an OpenPGP public keyring: %w", err)}
	}
	if len(keys) == 0 {
		return nil, &KeyringError{Path: path, Err: errors.New("holds no OpenPGP key")}
	}
	return &Keyring{path: path, entities: keys}, nil
}

// Only is the keyring reduced to the key whose fingerprint is fpr (hex,
// any case, blanks and colons ignored, as gpg and bmaptool's --fingerprint
// write it): only that key's signatures are good then. A fingerprint of no
// key in the keyring is a KeyringError.
func (k *Keyring) Only(fpr string) (*Keyring, error) {
	want := strings.ToUpper(strings.NewReplacer(" ", "", ":", "").Replace(fpr))
	for _, e := range k.entities {
		if e.PrimaryKey != nil && fmt.Sprintf("%X", e.PrimaryKey.Fingerprint) == want {
			return &Keyring{path: k.path, entities: openpgp.EntityList{e}}, nil
		}
	}
	return nil, &KeyringError{Path: k.path, Err: fmt.Errorf("holds no key with fingerprint %s", want)}
}

// Path is the file the keyring was read from.
func (k *Keyring) Path() string { return k.path }

// KeyringError is a keyring file that cannot be read or holds no key.
type KeyringError struct {
	Path string
	Err  error
}

func (e *KeyringError) Error() string { return fmt.Sprintf("keyring %s: %v", e.Path, e.Err) }
func (e *KeyringError) Unwrap() error { return e.Err }

// Class is Usage: the caller named the file.
func (e *KeyringError) Class() failure.Class { return failure.Usage }

// readBounded reads a whole file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("is larger than %d bytes", limit)
	}
	return data, nil
}

// isArmoured says data starts (after blanks) with an OpenPGP armour line.
func isArmoured(data []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("-----BEGIN PGP "))
}

// detachedSuffixes are the names publishers give a list's detached
// signature, LIST.gpg first (Ubuntu), LIST.sign last (Debian).
var detachedSuffixes = [...]string{".gpg", ".sig", ".asc", ".sign"}

// Signer is the key a list's good signature was made by.
type Signer struct {
	Fingerprint string // upper-case hex, as gpg shows it
	UserID      string // the key's primary user id, "" if it has none
}

func (s Signer) String() string {
	if s.UserID == "" {
		return "key " + s.Fingerprint
	}
	return s.UserID + " (key " + s.Fingerprint + ")"
}

// verifyList checks the list at path, whose bytes are data, against keys.
// For a clear-signed list it returns the signed text, the only part that
// may be read; sigPath is the detached signature's file, "" for a
// clear-signed list.
func verifyList(path string, data []byte, read ReadFunc, keys *Keyring) (signed []byte, sigPath string, by Signer, err error) {
	if block, _ := clearsign.Decode(data); block != nil {
		signer, err := block.VerifySignature(keys.entities, nil)
		if err != nil {
			return nil, "", Signer{}, signatureError(path, "", err)
		}
		return block.Plaintext, "", signerOf(signer), nil
	}
	for _, suffix := range detachedSuffixes {
		sig, err := read(path+suffix, maxKeyring)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, path + suffix, Signer{}, &ChecksumSignatureError{List: path, Signature: path + suffix, Err: err}
		}
		var signer *openpgp.Entity
		if isArmoured(sig) {
			signer, err = checkArmoured(keys, data, sig)
		} else {
			signer, err = openpgp.CheckDetachedSignature(keys.entities, bytes.NewReader(data), bytes.NewReader(sig), nil)
		}
		if err != nil {
			return nil, path + suffix, Signer{}, signatureError(path, path+suffix, err)
		}
		return nil, path + suffix, signerOf(signer), nil
	}
	return nil, "", Signer{}, &ChecksumSignatureError{List: path, Err: ErrListUnsigned}
}

// VerifySigned checks a signed file other than a checksum list (what
// names its kind: "block map") as a list's signature is checked: a good
// signature by a key of keys, clear-signed or detached beside it
// (PATH.gpg, .sig, .asc, .sign, read with read; nil reads local files).
// It returns the text to read (the signed text of a clear-signed file,
// else data), the detached signature's file ("" for a clear-signed one),
// and the key that signed it.
func VerifySigned(what, path string, data []byte, read ReadFunc, keys *Keyring) ([]byte, string, Signer, error) {
	if read == nil {
		read = readBounded
	}
	signed, sigPath, by, err := verifyList(path, data, read, keys)
	var se *ChecksumSignatureError
	if errors.As(err, &se) {
		se.What = what
	}
	if signed == nil {
		signed = data
	} else {
		signed = withLastNewline(signed)
	}
	return signed, sigPath, by, err
}

// withLastNewline is a clear-signed file's text as gpg --decrypt writes it
// out, ending with the line end that the signature's armour took: the
// bytes a checksum inside the file (a block map's own) was made over.
func withLastNewline(text []byte) []byte {
	if len(text) > 0 && text[len(text)-1] != '\n' {
		text = append(text[:len(text):len(text)], '\n')
	}
	return text
}

// SignatureBeside is the first detached signature beside path (PATH.gpg,
// .sig, .asc, .sign, read with read; nil reads local files), "" for none:
// a file used without keys says it carries one it did not check.
func SignatureBeside(path string, read ReadFunc) string {
	if read == nil {
		read = readBounded
	}
	for _, suffix := range detachedSuffixes {
		if _, err := read(path+suffix, maxKeyring); err == nil {
			return path + suffix
		}
	}
	return ""
}

// ClearSignedText is the signed text of a clear-signed file, its
// signature not checked; ok is false for a file that is not clear-signed.
func ClearSignedText(data []byte) (text []byte, ok bool) {
	if block, _ := clearsign.Decode(data); block != nil {
		return withLastNewline(block.Plaintext), true
	}
	return data, false
}

// checkArmoured checks an armoured detached signature; an armour block of
// another kind (a key saved under the signature's name) is no signature.
func checkArmoured(keys *Keyring, data, sig []byte) (*openpgp.Entity, error) {
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		return nil, err
	}
	if block.Type != openpgp.SignatureType {
		return nil, fmt.Errorf("holds a %s, not a signature", strings.ToLower(block.Type))
	}
	return openpgp.CheckDetachedSignature(keys.entities, bytes.NewReader(data), block.Body, nil)
}

// signerOf is the key that made a good signature.
func signerOf(e *openpgp.Entity) Signer {
	if e == nil || e.PrimaryKey == nil {
		return Signer{}
	}
	s := Signer{Fingerprint: fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)}
	if id := e.PrimaryIdentity(); id != nil {
		s.UserID = id.Name
	}
	return s
}

// The reasons a list's signature is not good, as the OpenPGP library
// reports them (ChecksumSignatureError wraps one of these and the
// library's error).
var (
	// ErrListUnsigned: the list is not clear-signed and no detached
	// signature lies beside it.
	ErrListUnsigned = failure.New(failure.Image, "carries no OpenPGP signature (it is not clear-signed, and no LIST.gpg, LIST.sig, LIST.asc or LIST.sign lies beside it)")
	// ErrBadSignature: the signature does not match the signed bytes.
	ErrBadSignature = failure.New(failure.Image, "has a signature that does not match its text")
	// ErrUnknownSigner: the signature is by a key not in the keyring.
	ErrUnknownSigner = failure.New(failure.Image, "is signed by a key that is not in the keyring")
	// ErrSignerExpired: the key or the signature has expired.
	ErrSignerExpired = failure.New(failure.Image, "has a signature that expired or was made by an expired key")
	// ErrSignerRevoked: the signing key is revoked.
	ErrSignerRevoked = failure.New(failure.Image, "is signed by a revoked key")
	// ErrSignatureUnreadable: the signature cannot be read or checked.
	ErrSignatureUnreadable = failure.New(failure.Image, "has a signature that cannot be checked")
)

// signatureError says why the OpenPGP library refused a list's signature.
func signatureError(list, sig string, err error) error {
	var bad pgperrors.SignatureError
	reason := ErrSignatureUnreadable
	switch {
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		reason = ErrUnknownSigner
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		reason = ErrSignerRevoked
	case errors.Is(err, pgperrors.ErrKeyExpired), errors.Is(err, pgperrors.ErrSignatureExpired):
		reason = ErrSignerExpired
	case errors.As(err, &bad):
		reason = ErrBadSignature
	}
	return &ChecksumSignatureError{List: list, Signature: sig, Err: fmt.Errorf("%w: %v", reason, err)}
}

// ChecksumSignatureError is a checksum list whose signature is not a good
// one by a key of the keyring given (or that has none).
type ChecksumSignatureError struct {
	List      string
	Signature string // the detached signature's file, "" for a clear-signed list or none
	Err       error
	What      string // the signed file's kind (VerifySigned); "": a checksum list
}

func (e *ChecksumSignatureError) Error() string {
	what := e.What
	if what == "" {
		what = "checksum list"
	}
	if e.Signature != "" {
		return fmt.Sprintf("%s %s (signature %s) %v", what, e.List, e.Signature, e.Err)
	}
	return fmt.Sprintf("%s %s %v", what, e.List, e.Err)
}
func (e *ChecksumSignatureError) Unwrap() error { return e.Err }

// Class is Image: the list cannot be trusted as its publisher meant.
func (e *ChecksumSignatureError) Class() failure.Class { return failure.Image }
