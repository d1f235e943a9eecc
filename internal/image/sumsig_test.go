package image

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/testpgp"
)

// TestChecksumSignature (issue 31): with the publisher's keys, the list
// the sum comes from must carry a good signature by one of them, clear-
// signed or detached beside it; whatever else refuses the image, naming
// the list and why; without keys a clear-signed list is read unchecked.
func TestChecksumSignature(t *testing.T) {
	t.Parallel()
	pub := testpgp.New(t, "Publisher <pub@example.invalid>", "never")
	other := testpgp.New(t, "Someone else <else@example.invalid>", "never")
	expired := testpgp.New(t, "Expired <old@example.invalid>", "1d", "--faked-system-time", "20200101T000000")
	revoked := testpgp.New(t, "Revoked <rev@example.invalid>", "never")
	// A list the key signed before it was revoked.
	revokedList := func() string {
		d := newListDir(t, "", "os.img.xz", "other.iso")
		d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
		revoked.Sign(d.dir, "SHA256SUMS", "clear")
		list, err := os.ReadFile(filepath.Join(d.dir, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		revoked.Revoke()
		return string(list)
	}()
	revokedKeys := revoked.Keyring(true)
	zeros := strings.Repeat("0", 64)

	for _, tc := range []struct {
		name  string
		keys  string                // the keyring file, "" for none
		lists func(d *listDir)      // writes SHA256SUMS and what signs it
		sum   func(*listDir) string // the sum found, nil for a refusal
		by    *testpgp.Signer       // the key the find says signed it
		sig   string                // the detached signature it names, "" for a clear-signed list
		want  error                 // the refusal's reason
		check func(*ChecksumFile) bool
	}{
		{name: "clear-signed, good", keys: pub.Keyring(true), sum: sumOf("os.img.xz"), by: pub,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", "clear")
			},
			check: func(f *ChecksumFile) bool { return f.Signed && f.Line == 5 }},
		{name: "clear-signed, good, a binary keyring", keys: pub.Keyring(false), sum: sumOf("os.img.xz"), by: pub,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", "clear")
			}},
		{name: "clear-signed, lines outside the signed text are not read", keys: pub.Keyring(true), sum: sumOf("os.img.xz"), by: pub,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", "clear")
				signed, _ := os.ReadFile(filepath.Join(d.dir, "SHA256SUMS"))
				d.write("SHA256SUMS", zeros+"  os.img.xz\n"+string(signed)+zeros+"  os.img.xz\n")
			}},
		{name: "clear-signed, the signed text changed", keys: pub.Keyring(true), want: ErrBadSignature,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", "clear")
				signed, _ := os.ReadFile(filepath.Join(d.dir, "SHA256SUMS"))
				d.write("SHA256SUMS", strings.Replace(string(signed), d.sums["os.img.xz"], zeros, 1))
			}},
		{name: "clear-signed by a key not in the keyring", keys: pub.Keyring(true), want: ErrUnknownSigner,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				other.Sign(d.dir, "SHA256SUMS", "clear")
			}},
		{name: "clear-signed by an expired key", keys: expired.Keyring(true), want: ErrSignerExpired,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				expired.Sign(d.dir, "SHA256SUMS", "clear", "--faked-system-time", "20200101T120000")
			}},
		{name: "clear-signed by a revoked key", keys: revokedKeys, want: ErrSignerRevoked,
			lists: func(d *listDir) {
				d.write("SHA256SUMS", revokedList)
			}},
		{name: "SHA256SUMS.gpg, good", keys: pub.Keyring(true), sum: sumOf("os.img.xz"), by: pub, sig: "SHA256SUMS.gpg",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", ".gpg")
			},
			check: func(f *ChecksumFile) bool { return !f.Signed && f.Line == 2 }},
		{name: "SHA256SUMS.asc, good", keys: pub.Keyring(false), sum: sumOf("os.img.xz"), by: pub, sig: "SHA256SUMS.asc",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", ".asc")
			}},
		{name: "SHA256SUMS.sign, good (Debian's name)", keys: pub.Keyring(true), sum: sumOf("os.img.xz"), by: pub, sig: "SHA256SUMS.sign",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", ".sign")
			}},
		{name: "SHA256SUMS.gpg over a list changed since", keys: pub.Keyring(true), want: ErrBadSignature, sig: "SHA256SUMS.gpg",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", ".gpg")
				d.write("SHA256SUMS", zeros+"  os.img.xz\n")
			}},
		{name: "SHA256SUMS.asc over a list changed since", keys: pub.Keyring(true), want: ErrBadSignature, sig: "SHA256SUMS.asc",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", ".asc")
				d.write("SHA256SUMS", zeros+"  os.img.xz\n")
			}},
		{name: "SHA256SUMS.gpg by another key", keys: pub.Keyring(true), want: ErrUnknownSigner, sig: "SHA256SUMS.gpg",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				other.Sign(d.dir, "SHA256SUMS", ".gpg")
			}},
		{name: "SHA256SUMS.asc that is a key, not a signature", keys: pub.Keyring(true), want: ErrSignatureUnreadable, sig: "SHA256SUMS.asc",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				key, _ := os.ReadFile(pub.Keyring(true))
				d.write("SHA256SUMS.asc", string(key))
			}},
		{name: "a list without a signature", keys: pub.Keyring(true), want: ErrListUnsigned,
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz")) }},
		{name: "a sidecar without a signature", keys: pub.Keyring(true), want: ErrListUnsigned,
			lists: func(d *listDir) { d.write("os.img.xz.sha256", d.run("", "sha256sum", "os.img.xz")) }},
		{name: "an unsigned list for other files is passed over, the signed one used", keys: pub.Keyring(true),
			sum: sumOf("os.img.xz"), by: pub, sig: "SHA256SUMS.gpg",
			lists: func(d *listDir) {
				d.write("os.img.xz.sha256", d.run("", "sha256sum", "other.iso"))
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", ".gpg")
			}},
		{name: "no keyring: clear-signed by anyone, read unchecked", sum: sumOf("os.img.xz"),
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				other.Sign(d.dir, "SHA256SUMS", "clear")
			},
			check: func(f *ChecksumFile) bool { return f.Signed }},
		{name: "no keyring: the changed signed text is what is read", sum: literal(zeros),
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz"))
				pub.Sign(d.dir, "SHA256SUMS", "clear")
				signed, _ := os.ReadFile(filepath.Join(d.dir, "SHA256SUMS"))
				d.write("SHA256SUMS", strings.Replace(string(signed), d.sums["os.img.xz"], zeros, 1))
			}},
		{name: "no keyring: an unsigned list", sum: sumOf("os.img.xz"),
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newListDir(t, "", "os.img.xz", "other.iso")
			tc.lists(d)
			var keys *Keyring
			if tc.keys != "" {
				var err error
				if keys, err = ReadKeyring(tc.keys); err != nil {
					t.Fatalf("ReadKeyring: %v", err)
				}
			}
			got, _, err := FindChecksum(filepath.Join(d.dir, "os.img.xz"), keys)
			if tc.want != nil {
				var se *ChecksumSignatureError
				if !errors.Is(err, tc.want) || !errors.As(err, &se) || failure.Of(err) != failure.Image {
					t.Fatalf("err = %v (class %v), want %q", err, failure.Of(err), tc.want)
				}
				list := filepath.Join(d.dir, "SHA256SUMS")
				if tc.name == "a sidecar without a signature" {
					list = filepath.Join(d.dir, "os.img.xz.sha256")
				}
				if se.List != list || !strings.Contains(err.Error(), list) {
					t.Errorf("err names %q: %v, want %s", se.List, err, list)
				}
				if want := filepath.Join(d.dir, tc.sig); tc.sig != "" && se.Signature != want {
					t.Errorf("signature %q, want %q", se.Signature, want)
				}
				factsonly.Check(t, err.Error())
				return
			}
			if err != nil || got == nil {
				t.Fatalf("FindChecksum: %+v, %v", got, err)
			}
			if got.Sum != tc.sum(d) {
				t.Errorf("sum %s, want %s", got.Sum, tc.sum(d))
			}
			switch {
			case tc.by == nil && got.SignedBy != nil:
				t.Errorf("signed by %v, want no signature checked", got.SignedBy)
			case tc.by != nil && (got.SignedBy == nil || got.SignedBy.Fingerprint != tc.by.Fingerprint || got.SignedBy.UserID != tc.by.UID):
				t.Errorf("signed by %v, want %s (%s)", got.SignedBy, tc.by.UID, tc.by.Fingerprint)
			}
			if want := filepath.Join(d.dir, tc.sig); tc.sig != "" && got.SignatureFile != want || tc.sig == "" && got.SignatureFile != "" {
				t.Errorf("signature file %q, want %q", got.SignatureFile, tc.sig)
			}
			if tc.check != nil && !tc.check(got) {
				t.Errorf("found %+v", got)
			}
		})
	}
}

// TestKeyringNeedsASum (issue 41): with keys, an image no list beside it
// gives a sum is refused (keys ask for an authenticated image), naming
// what was found: no list, lists without its line (another file's list,
// signed or not, whose signature is then not looked at), or standard
// input; beside a URL as beside a file. Without keys the same image is
// only said to have no sum.
func TestKeyringNeedsASum(t *testing.T) {
	t.Parallel()
	pub := testpgp.New(t, "Publisher <pub@example.invalid>", "never")
	keys, err := ReadKeyring(pub.Keyring(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		image string // "-": standard input
		url   bool   // read beside a URL, with a ReadFunc
		lists func(d *listDir)
		says  string
	}{
		{name: "no list", says: "no signed SHA-256 for os.img.xz: no checksum list lies beside it (os.img.xz.sha256, os.img.xz.sha256sum, os.img.xz.sha or SHA256SUMS)"},
		{name: "no list beside a URL", url: true, says: "no signed SHA-256 for os.img.xz: no checksum list lies beside it"},
		{name: "a signed list for other files", says: "SHA256SUMS has no line for os.img.xz",
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso"))
				pub.Sign(d.dir, "SHA256SUMS", "clear")
			}},
		{name: "an unsigned list for other files beside a URL", url: true, says: "SHA256SUMS has no line for os.img.xz",
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso")) }},
		{name: "a list whose line is for the file in another directory", says: "(its lines for sub/os.img.xz are for files in other directories)",
			lists: func(d *listDir) { d.write("SHA256SUMS", d.sums["os.img.xz"]+"  sub/os.img.xz\n") }},
		{name: "standard input", image: "-", says: "no signed SHA-256 for standard input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := newListDir(t, "", "os.img.xz", "other.iso")
			if tc.lists != nil {
				tc.lists(d)
			}
			find := func(keys *Keyring) (*ChecksumFile, error) {
				var f *ChecksumFile
				var err error
				switch {
				case tc.image == "-":
					f, _, err = FindChecksum("-", keys)
				case tc.url:
					read := func(name string, limit int64) ([]byte, error) {
						return readBounded(filepath.Join(d.dir, strings.TrimPrefix(name, "https://example.org/os/")), limit)
					}
					f, _, err = FindChecksumURL("https://example.org/os/os.img.xz?token=t", read, keys)
				default:
					f, _, err = FindChecksum(filepath.Join(d.dir, "os.img.xz"), keys)
				}
				return f, err
			}
			if f, err := find(nil); f != nil || err != nil {
				t.Fatalf("without keys: %+v, %v; want no sum and no error", f, err)
			}
			f, err := find(keys)
			var none *NoSignedSumError
			if f != nil || !errors.As(err, &none) || failure.Of(err) != failure.Image || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("FindChecksum = %+v, %v (class %v); want a refusal saying %q", f, err, failure.Of(err), tc.says)
			}
			factsonly.Check(t, err.Error())
		})
	}
}

// TestReadKeyring: a keyring file that holds no public key is refused as
// a usage error naming the file.
func TestReadKeyring(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.gpg"), "no such file"},
		{"empty", write("empty.gpg", ""), "holds no OpenPGP key"},
		{"text", write("text.asc", "not a key\n"), "is not an OpenPGP public keyring"},
		{"armour of a signature", write("sig.asc", "-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n"), "is not an OpenPGP public keyring"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadKeyring(tc.path)
			var ke *KeyringError
			if !errors.As(err, &ke) || ke.Path != tc.path || !strings.Contains(err.Error(), tc.want) || failure.Of(err) != failure.Usage {
				t.Fatalf("err = %v (class %v), want %q about %s", err, failure.Of(err), tc.want, tc.path)
			}
			factsonly.Check(t, err.Error())
		})
	}
}
