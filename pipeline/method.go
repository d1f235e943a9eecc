package pipeline

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// VerifyMethod is how a read-back is checked. It is chosen once (a flag,
// a config) and carried as it is: to the write, which records what the
// method needs (Record), to the read-back, which checks by it
// (VerifyWritten), and to the result and the report, which say how
// (Report, Describe). A new method is a row of verifyMethods and its
// branches in Record and VerifyWritten: this file and nothing outside the
// engine.
type VerifyMethod uint8

// The methods. The zero value is the default of a write.
const (
	// MethodDigests checks each write command's range against an xxh3
	// digest taken as it was written (32 bytes per command): it costs
	// about what reading costs, and a mismatch names its range at once.
	MethodDigests VerifyMethod = iota
	// MethodSHA256 hashes the decoded image and the read-back with
	// SHA-256, as a publisher's checksum or a comparison needs, at several
	// times the CPU on a host without SHA instructions.
	MethodSHA256
	// MethodCompare compares the card byte by byte with a fresh decode of
	// the image (Verify): what verifying a card against an image does; a
	// write does not check by it.
	MethodCompare
)

// verifyMethods is every method's names: as it is chosen (String, parsed
// by ParseVerifyMethod), as results and reports name it (Report), and in
// words (Describe); write says whether a write can be checked by it.
var verifyMethods = [...]struct {
	name, report, how string
	write             bool
}{
	MethodDigests: {"xxh3", "xxh3 per transfer", "each write command's xxh3 digest checked", true},
	MethodSHA256:  {"sha256", "sha256", "its SHA-256 checked against the image's", true},
	MethodCompare: {"compare", "compare", "compared with the image", false},
}

func (m VerifyMethod) known() bool { return int(m) < len(verifyMethods) }

// String is the method's name as it is chosen ("xxh3", "sha256").
func (m VerifyMethod) String() string {
	if !m.known() {
		return fmt.Sprintf("VerifyMethod(%d)", m)
	}
	return verifyMethods[m].name
}

// Report is the method's name in results and reports ("xxh3 per
// transfer", "sha256", "compare").
func (m VerifyMethod) Report() string {
	if !m.known() {
		return m.String()
	}
	return verifyMethods[m].report
}

// Describe says in words how the read-back was checked.
func (m VerifyMethod) Describe() string {
	if !m.known() {
		return m.String()
	}
	return verifyMethods[m].how
}

// WriteMethods are the methods a write can be checked by, the default
// first.
func WriteMethods() []VerifyMethod {
	var ms []VerifyMethod
	for m := range verifyMethods {
		if verifyMethods[m].write {
			ms = append(ms, VerifyMethod(m))
		}
	}
	return ms
}

// MethodError is a verify method asked for that a write cannot be
// checked by.
type MethodError struct{ Name string }

func (e *MethodError) Error() string {
	names := make([]string, 0, len(verifyMethods))
	for _, m := range WriteMethods() {
		names = append(names, m.String())
	}
	return fmt.Sprintf("verify method %q: the methods are %s", e.Name, strings.Join(names, " and "))
}

// Class is Usage: the method was chosen by the caller.
func (e *MethodError) Class() failure.Class { return failure.Usage }

// ParseVerifyMethod is the write method named s (String's names).
func ParseVerifyMethod(s string) (VerifyMethod, error) {
	for _, m := range WriteMethods() {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, &MethodError{Name: s}
}

// CheckWrite refuses a method a write cannot be checked by.
func (m VerifyMethod) CheckWrite() error {
	if !m.known() || !verifyMethods[m].write {
		return &MethodError{Name: m.String()}
	}
	return nil
}

// Record sets what a write checked by m must record as it streams: the
// image's SHA-256 only for MethodSHA256 (a slow CPU, an embedded host or
// an emulator, hashes at a few tens of MB/s), the per-command digests for
// MethodDigests (a tenth of that cost).
func (m VerifyMethod) Record(o WriteOptions) WriteOptions {
	o.HashAlg, o.Digests = HashNone, false
	switch m {
	case MethodSHA256:
		o.HashAlg = HashSHA256
	case MethodDigests:
		o.Digests = true
	}
	return o
}

// VerifyWritten reads back what a write recorded by m.Record wrote
// (res; only what it wrote when it skipped parts) and checks it by m. A
// mismatch is located to its first differing LBA by comparing the card
// with a fresh decode of the image from reopen (LocateMismatch); reopen
// nil (standard input, read once) leaves the mismatch as found.
func VerifyWritten(ctx context.Context, dev blockdev.Device, m VerifyMethod, res WriteResult, opts VerifyOptions, reopen func() (io.ReadCloser, error)) (VerifyResult, error) {
	want := res.SHA256
	if res.Written != nil {
		opts.Only, want = res.Written, res.WrittenSHA256
	}
	var v VerifyResult
	var err error
	switch m {
	case MethodSHA256:
		v, err = VerifyHash(ctx, dev, res.Bytes, want, opts)
	case MethodDigests:
		v, err = VerifyDigests(ctx, dev, res.Digests, opts)
	default:
		return VerifyResult{}, m.CheckWrite()
	}
	if err != nil && reopen != nil {
		err = LocateMismatch(ctx, dev, reopen, res.Bytes, opts, err)
	}
	return v, err
}
