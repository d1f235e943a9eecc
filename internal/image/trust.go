package image

import (
	"context"
	"sync"

	"github.com/usbflash/usbflash/internal/failure"
)

// An image is checked against its publisher's SHA-256 before a card may
// boot it. Publishers give the sum of the file they serve (os.img.xz) or
// of the image in it (os.img), and the user cannot always tell which: the
// file's is compared first and, when it does not match a compressed
// image, the decoded image's.
//
// A file is hashed from the descriptor the write reads, on its own
// goroutine while the cards are opened and written (it is the compressed
// file, a fraction of the image, and mostly in the page cache by then); a
// stream (standard input, a pipe) is hashed as the decoder reads it, once.

// checksum is the sum an image is checked against, and what is known of
// the image's own sums so far.
type checksum struct {
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
	also []alsoSum
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

// alsoSum is one more SHA-256 an image must match: the file's, or with
// decoded the decoded image's, as from says.
type alsoSum struct {
	want, from string
	decoded    bool
}

// asAlso is c's sums as sums another must be matched beside.
func (c *checksum) asAlso() []alsoSum {
	return append([]alsoSum{{want: c.want, from: c.from, decoded: c.decodedOnly}}, c.also...)
}

// hashesFile says the file's own sum is compared, so a file is hashed
// from the start.
func (c *checksum) hashesFile() bool {
	if !c.decodedOnly {
		return true
	}
	for _, a := range c.also {
		if !a.decoded {
			return true
		}
	}
	return false
}

// sumGiven is the from of a sum the caller gave (Ref.SHA256).
const sumGiven = "the SHA-256 given"

// the names the sum: the one given, or the one in the list it is from.
func (c *checksum) the() string {
	if c.from == sumGiven {
		return sumGiven
	}
	return "the SHA-256 in " + c.from
}

// findSum is the sum the image is checked against (Ref.SHA256, a catalog
// entry's, or a list beside the image or its URL: readBeside, nil for a
// file), nil for none, and what the lists beside the image that have no
// line for it say, for the session to pass on once. With a keyring the sum
// must come from a list its keys signed, also for a catalog's entry (whose
// own sums are then checked too): no such sum is an error.
func (o *Opened) findSum(readBeside ReadFunc) (*checksum, []string, error) {
	ref := o.ref
	fromCatalog := o.catalogSum()
	switch {
	case ref.SHA256 != "":
		sum, err := ParseSHA256(ref.SHA256)
		if err != nil {
			return nil, nil, &failure.SettingError{Setting: SettingSHA256, Err: &ChecksumArgError{Err: err}}
		}
		c := &checksum{want: sum, from: sumGiven}
		if fromCatalog != nil {
			// A sum given with a catalog's entry is checked, not passed
			// over: the entry's sums hold too.
			c.also = fromCatalog.asAlso()
		}
		return c, nil, nil
	case fromCatalog != nil && ref.SHA256Keyring == "":
		return fromCatalog, nil, nil
	case ref.NoSHA256:
		return nil, nil, nil
	}
	keys, err := ref.keys()
	if err != nil {
		return nil, nil, err
	}
	var found *ChecksumFile
	var passed []NoChecksumLine
	if readBeside != nil {
		found, passed, err = FindChecksumURL(ref.Path, readBeside, keys)
	} else {
		found, passed, err = FindChecksum(ref.Path, keys)
	}
	var notes []string
	if !errNoSignedSum(err) { // which says them itself
		for _, p := range passed {
			notes = append(notes, p.String())
		}
	}
	if err != nil {
		return nil, notes, &ReadError{Err: err}
	}
	if found == nil {
		return nil, notes, nil
	}
	c := &checksum{want: found.Sum, from: Shown(found.Path), decodedOnly: found.Decoded}
	if found.Decoded {
		c.from = Shown(found.Path) + "'s line for " + found.Name
	}
	if fromCatalog != nil {
		// The entry's sums are the ones it was chosen by: they hold too.
		c.also = fromCatalog.asAlso()
	}
	if found.SignedBy != nil {
		c.signedBy = found.SignedBy.String()
	}
	switch {
	case found.SignedBy != nil && found.SignatureFile != "":
		notes = append(notes, found.SignatureFile+" is a good signature of "+found.Path+" by "+found.SignedBy.String())
	case found.SignedBy != nil:
		notes = append(notes, found.Path+"'s signature was checked: a good signature by "+found.SignedBy.String())
	case found.Signed:
		notes = append(notes, found.Path+" is PGP signed; its signature was not checked")
	}
	return c, notes, nil
}

// Sum names what the image is checked against ("the SHA-256 given", "the
// SHA-256 in URL/SHA256SUMS"), "" when nothing.
func (o *Opened) Sum() string {
	if o == nil || o.sum == nil {
		return ""
	}
	return o.sum.the()
}

// SumFrom names where the sum the image is checked against comes from (a
// list beside the image, a catalog's entry, the one given) and the key
// whose good signature that list carries ("" when none was checked);
// both "" when the image is checked against nothing.
func (o *Opened) SumFrom() (from, signedBy string) {
	if o == nil || o.sum == nil {
		return "", ""
	}
	return o.sum.from, o.sum.signedBy
}

// StartCheck says what the image is checked against (as: when, "as it is
// written") and, for a file, starts hashing src, the session's first
// source, open until the session ends; a stream is hashed as it is read.
func (o *Opened) StartCheck(ctx context.Context, src *Source, as string) {
	c := o.sum
	if c == nil {
		return
	}
	if !src.Stream() && c.hashesFile() {
		c.done = make(chan struct{})
		go func() {
			defer close(c.done)
			c.file, c.fileErr = src.InputSHA256(ctx)
		}()
	}
	what := o.Named()
	if c.decodedOnly {
		what = "the image in " + what
	}
	o.note("Checking " + what + " against " + c.the() + " " + as)
}

// Check compares the image with its sum, once src was read to its end (a
// file: at any time), and says which of the image file and the decoded
// image matched; "" and nil when there is nothing to check. A cache entry
// that is not the file it is named by is removed (*CacheEntryError): the
// next read asks the server.
func (o *Opened) Check(ctx context.Context, src *Source) (string, error) {
	if o == nil {
		return "", nil
	}
	matched, err := o.check(ctx, src)
	return matched, o.dropDamagedEntry(err)
}

func (o *Opened) check(ctx context.Context, src *Source) (string, error) {
	c := o.sum
	if c == nil {
		return "", nil
	}
	matched, err := o.checkSum(ctx, c, src)
	if err != nil {
		return "", err
	}
	for _, a := range c.also {
		var got string
		if a.decoded {
			got, err = c.decodedSum(ctx, src)
		} else {
			got, err = c.fileSum(ctx, src)
		}
		if err != nil {
			return "", &ReadError{Err: err}
		}
		if got != a.want {
			mismatch := &ChecksumMismatchError{Image: o.Named(), From: a.from, Want: a.want, Got: got}
			if a.decoded {
				mismatch.Got, mismatch.GotDecoded = "", got
			}
			return "", mismatch
		}
		what := "the image file"
		if a.decoded {
			what = "the decoded image"
		}
		matched += ", and " + what + " the SHA-256 in " + a.from
	}
	return matched, nil
}

// checkSum compares the image with c's own sum: the file's SHA-256 first
// and, when it differs from a compressed image's, the decoded image's.
func (o *Opened) checkSum(ctx context.Context, c *checksum, src *Source) (string, error) {
	var file string
	if !c.decodedOnly {
		var err error
		if file, err = c.fileSum(ctx, src); err != nil {
			return "", &ReadError{Err: err}
		}
		if file == c.want {
			return "The image file matches " + c.the(), nil
		}
	}
	mismatch := &ChecksumMismatchError{Image: o.Named(), From: c.from, Want: c.want, Got: file}
	if src.Format == FormatRaw || c.fileOnly {
		return "", mismatch // the file is the image, or the sum is the file's
	}
	if !c.decodedOnly && !src.Stream() {
		o.note("The image file's SHA-256 is not " + c.the() + ": decoding it again to compare the image's")
	}
	decoded, err := c.decodedSum(ctx, src)
	if err != nil {
		return "", &ReadError{Err: err}
	}
	switch {
	case decoded == c.want && c.decodedOnly:
		return "The decoded image matches " + c.the(), nil
	case decoded == c.want:
		return "The decoded image matches " + c.the() + " (a sum of the image, not of the " + src.Format.String() + " file)", nil
	}
	mismatch.GotDecoded = decoded
	return "", mismatch
}

// fileSum is the input's SHA-256: a file's from its goroutine, a stream's
// from what was read.
func (c *checksum) fileSum(ctx context.Context, src *Source) (string, error) {
	if c.done == nil {
		return src.InputSHA256(ctx)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return c.file, c.fileErr
}

// decodedSum is the decoded image's SHA-256, computed once for all the
// cards of a session.
func (c *checksum) decodedSum(ctx context.Context, src *Source) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decoded != "" {
		return c.decoded, nil
	}
	sum, err := src.DecodedSHA256(ctx)
	if err != nil {
		return "", err
	}
	c.decoded = sum
	return sum, nil
}
