package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
)

// trustFlags are how a command that reads an image checks and keeps it,
// the same for write and verify: its publisher's checksum (--sha256,
// --no-sha256), the keys that sign it (--sha256-keyring,
// --sha256-fingerprint) and the download cache (--cache, --cache-size).
type trustFlags struct {
	sha256               string
	noSHA256             bool
	keyring, fingerprint string
	cache, cacheSize     string // --cache DIR, --cache-size
}

// register adds the flags; verb is the command ("write", "verify"), as
// it is when the check is made ("written", "compared").
func (f *trustFlags) register(fl *pflag.FlagSet, verb, as string) {
	fl.StringVar(&f.sha256, "sha256", "", "the SHA-256 its publisher gives for the image file or for the image in it: checked as it is "+as+" (standard input and pipes too), before the first transfer (default: IMAGE.sha256, IMAGE.sha or SHA256SUMS beside the image, when there is one)")
	fl.BoolVar(&f.noSHA256, "no-sha256", false, "do not look for the image's checksum beside it")
	fl.StringVar(&f.keyring, "sha256-keyring", "", "the publisher's OpenPGP public keys (gpg --export [--armor]): the checksum list beside the image must carry a good signature by one of them, clear-signed or in LIST.gpg, LIST.sig, LIST.asc or LIST.sign beside it, or the "+verb+" is refused, also when no list gives the image a sum (a catalog's entry too); a block map beside the image is checked as bmaptool --keyring does")
	fl.StringVar(&f.fingerprint, "sha256-fingerprint", "", "with --sha256-keyring: only the key with this fingerprint signs (as bmaptool --fingerprint)")
	fl.StringVar(&f.cache, "cache", "", "keep an image read from a URL in this directory, named by its SHA-256: reused by later runs, a cut-short one resumed from where it ended")
	fl.StringVar(&f.cacheSize, "cache-size", "0", "with --cache: at most this much in the directory, the least recently used going first (0: bounded only by the free space, of which 1 GiB, or a tenth of a smaller disk, is always left)")
}

// imageRef is the image at path, or cat's catalog entry, checked and
// kept as the flags f say, and read over the command's HTTP settings.
func (a *app) imageRef(path string, cat catalogFlags, f trustFlags) (image.Ref, error) {
	ref := image.Ref{Path: path, Catalog: cat.catalog, OS: cat.os, SHA256: f.sha256, NoSHA256: f.noSHA256,
		SHA256Keyring: f.keyring, SHA256Fingerprint: f.fingerprint, Cache: f.cache}
	var err error
	if ref.CacheMax, err = units.ParseSize(f.cacheSize); err != nil {
		return ref, &usageError{fmt.Sprintf("--cache-size: %v", err)}
	}
	ref.HTTP, err = a.httpOptions()
	return ref, err
}
