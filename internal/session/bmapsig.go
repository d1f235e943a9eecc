package session

import (
	"github.com/usbflash/usbflash/internal/image"
)

// blockMapSig checks a block map's OpenPGP signature as bmaptool's
// --keyring does, with the keyring the checksum lists are checked with
// (Config.SHA256Keyring): with keys, the map must carry a good signature
// by one of them, clear-signed or detached beside it; without, a map that
// carries one is used and the session says, once, that it was not checked.
type blockMapSig struct {
	cfg     Config       // its SHA256Keyring and SHA256Fingerprint
	keyring string       // "": none given
	note    func(string) // the session's notes; nil says nothing
}

// blockMapSig is the session's: its keyring and its notes.
func (s *session) blockMapSig() blockMapSig {
	return blockMapSig{cfg: s.cfg, keyring: s.cfg.SHA256Keyring, note: func(msg string) { s.emit(Note{Message: msg}) }}
}

// check returns the map's text to parse (a clear-signed map's signed
// text) once its signature is checked, or said not to be.
func (c blockMapSig) check(path string, data []byte, read image.ReadFunc) ([]byte, error) {
	if c.keyring == "" && c.note == nil {
		text, _ := image.ClearSignedText(data)
		return text, nil
	}
	if c.keyring == "" {
		text, clear := image.ClearSignedText(data)
		sig := image.SignatureBeside(path, read)
		switch {
		case clear:
			c.note("Block map " + path + " is PGP clear-signed; its signature was not checked: no keyring was given")
		case sig != "":
			c.note("Block map " + path + " has a signature beside it (" + sig + "); it was not checked: no keyring was given")
		}
		return text, nil
	}
	keys, err := readKeys(c.cfg)
	if err != nil {
		return nil, err
	}
	text, sig, by, err := image.VerifySigned("block map", path, data, read, keys)
	if err != nil {
		return nil, &ImageError{Err: err}
	}
	if c.note != nil {
		if sig != "" {
			c.note(sig + " is a good signature of block map " + path + " by " + by.String())
		} else {
			c.note("Block map " + path + "'s signature was checked: a good signature by " + by.String())
		}
	}
	return text, nil
}
