package image

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// listDir is a directory of images and checksum lists made for a test:
// the images are files of their own bytes, and the lists are written as
// given or made by the tools publishers use (sha256sum, shasum, gpg).
type listDir struct {
	t    *testing.T
	dir  string
	gpg  string // GNUPGHOME with a key, made on first use
	sums map[string]string
}

func newListDir(t *testing.T, gpgHome string, images ...string) *listDir {
	t.Helper()
	d := &listDir{t: t, dir: t.TempDir(), gpg: gpgHome, sums: map[string]string{}}
	for i, name := range images {
		data := bytes.Repeat([]byte{byte(i + 1)}, 1000+i)
		d.write(name, string(data))
		s := sha256.Sum256(data)
		d.sums[name] = hex.EncodeToString(s[:])
	}
	return d
}

func (d *listDir) write(name, body string) {
	d.t.Helper()
	p := filepath.Join(d.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// run runs a tool in the directory (a subdirectory of it when in is set)
// and returns its standard output. A missing tool fails the test: these
// lists are what the tools write, not what a test imagines they write.
func (d *listDir) run(in, name string, args ...string) string {
	d.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Join(d.dir, in)
	if d.gpg != "" {
		cmd.Env = append(os.Environ(), "GNUPGHOME="+d.gpg)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		d.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// clearsign is text as gpg --clearsign signs it.
func (d *listDir) clearsign(text string) string {
	d.t.Helper()
	if d.gpg == "" {
		d.t.Fatal("no GNUPGHOME for this test")
	}
	d.write("unsigned.txt", text)
	return d.run("", "gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "",
		"--clearsign", "--output", "-", "unsigned.txt")
}

// gpgHome is a throwaway GNUPGHOME holding a signing key without a
// passphrase; its agent is stopped at the test's end.
func gpgHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("gpg", "--batch", "--homedir", home, "--pinentry-mode", "loopback", "--passphrase", "",
		"--quick-gen-key", "usbflash test <test@usbflash.invalid>", "ed25519", "sign", "never")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpg --quick-gen-key: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("gpgconf", "--homedir", home, "--kill", "gpg-agent").Run() })
	return home
}

// checksumCase is one image beside its checksum lists and what
// FindChecksum must make of them.
type checksumCase struct {
	name   string
	images []string                 // files made with bytes of their own
	lists  func(d *listDir)         // writes the lists
	image  string                   // the image looked up, relative to the directory
	from   string                   // the list the sum comes from, "" for none
	sum    func(d *listDir) string  // the sum it must give
	check  func(*ChecksumFile) bool // more about the find, nil: nothing
	notes  []string                 // what the lists without a line must say, in order
	err    string                   // the error's text, "" for none
	errAs  any                      // and its type, as a pointer to one
}

func runChecksumCases(t *testing.T, gpg string, cases []checksumCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newListDir(t, gpg, tc.images...)
			tc.lists(d)
			got, passed, err := FindChecksum(filepath.Join(d.dir, tc.image), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if tc.errAs != nil && !errors.As(err, tc.errAs) {
					t.Errorf("err %T, want %T", err, tc.errAs)
				}
				return
			}
			if err != nil {
				t.Fatalf("FindChecksum: %v", err)
			}
			var notes []string
			for _, n := range passed {
				notes = append(notes, strings.ReplaceAll(n.String(), d.dir+"/", ""))
			}
			if strings.Join(notes, "\n") != strings.Join(tc.notes, "\n") {
				t.Errorf("notes:\n%s\nwant:\n%s", strings.Join(notes, "\n"), strings.Join(tc.notes, "\n"))
			}
			switch {
			case tc.from == "" && got != nil:
				t.Errorf("found %+v, want none", got)
			case tc.from == "":
			case got == nil:
				t.Errorf("found none, want one in %s", tc.from)
			case got.Path != filepath.Join(filepath.Dir(filepath.Join(d.dir, tc.image)), tc.from):
				t.Errorf("found in %s, want %s", got.Path, tc.from)
			case got.Sum != tc.sum(d):
				t.Errorf("sum %s (line %d), want %s", got.Sum, got.Line, tc.sum(d))
			case tc.check != nil && !tc.check(got):
				t.Errorf("found %+v", got)
			}
		})
	}
}

var (
	zeros = strings.Repeat("0", 64)
	ones  = strings.Repeat("1", 64)
)

func sumOf(name string) func(d *listDir) string {
	return func(d *listDir) string { return d.sums[name] }
}

func literal(s string) func(*listDir) string { return func(*listDir) string { return s } }

// TestChecksumNames (issue 31 item 1): a line's name is relative to the
// list's directory, as sha256sum -c opens it: sub/os.img.xz is not the
// os.img.xz beside the list, and a list above arm64/ and armhf/ gives each
// its own line.
func TestChecksumNames(t *testing.T) {
	runChecksumCases(t, "", []checksumCase{
		{
			name: "a line for sub/os.img.xz first, then the image's own", images: []string{"os.img.xz", "sub/os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.sums["sub/os.img.xz"]+"  sub/os.img.xz\n"+zeros+"  os.img.xz\n")
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: literal(zeros),
			check: func(f *ChecksumFile) bool { return f.Line == 2 && f.Name == "os.img.xz" },
		},
		{
			name: "sha256sum over armhf/ and arm64/, the image in arm64/", images: []string{"armhf/os.img.xz", "arm64/os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "armhf/os.img.xz", "arm64/os.img.xz")) },
			image: "arm64/os.img.xz", from: "../SHA256SUMS", sum: sumOf("arm64/os.img.xz"),
			check: func(f *ChecksumFile) bool { return f.Line == 2 },
		},
		{
			name: "the same list, the image in armhf/", images: []string{"armhf/os.img.xz", "arm64/os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "armhf/os.img.xz", "arm64/os.img.xz")) },
			image: "armhf/os.img.xz", from: "../SHA256SUMS", sum: sumOf("armhf/os.img.xz"),
		},
		{
			name: "the same list beside an os.img.xz of its own directory", images: []string{"armhf/os.img.xz", "arm64/os.img.xz", "os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "armhf/os.img.xz", "arm64/os.img.xz")) },
			image: "os.img.xz",
			notes: []string{"SHA256SUMS has no line for os.img.xz (its lines for armhf/os.img.xz, arm64/os.img.xz are for files in other directories)"},
		},
		{
			name: "./os.img.xz is the image", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "./os.img.xz")) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "an absolute name", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", filepath.Join(d.dir, "os.img.xz"))) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "the list above has no line for the image: not this directory's list", images: []string{"arm64/os.img.xz", "other.iso"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso")) },
			image: "arm64/os.img.xz",
		},
		{
			name: "the image's directory's list before the one above", images: []string{"arm64/os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", zeros+"  arm64/os.img.xz\n")
				d.write("arm64/SHA256SUMS", d.run("arm64", "sha256sum", "os.img.xz"))
			},
			image: "arm64/os.img.xz", from: "SHA256SUMS", sum: sumOf("arm64/os.img.xz"),
		},
		{
			name: "a list for other files only says so", images: []string{"os.img.xz", "other.iso"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso")) },
			image: "os.img.xz", notes: []string{"SHA256SUMS has no line for os.img.xz"},
		},
	})
}

// TestChecksumConflict (issue 31 item 2): two lines for the image that
// disagree refuse, naming both; two that agree are one.
func TestChecksumConflict(t *testing.T) {
	runChecksumCases(t, "", []checksumCase{
		{
			name: "the right sum first, then another", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz")+ones+"  other.iso\n"+zeros+" *os.img.xz\n")
			},
			image: "os.img.xz", errAs: new(*ChecksumConflictError),
			err: "SHA256SUMS gives os.img.xz two different SHA-256s: line 1 ", // and line 3, below
		},
		{
			name: "both named: line numbers and lines", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("os.img.xz.sha256", zeros+"  os.img.xz\n"+ones+"  ./os.img.xz\n") },
			image: "os.img.xz", errAs: new(*ChecksumConflictError),
			err: "line 1 " + zeros + "  os.img.xz and line 2 " + ones + "  ./os.img.xz",
		},
		{
			name: "a sum alone and a line in one sidecar", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("os.img.xz.sha256", zeros+"\n"+ones+"  os.img.xz\n") },
			image: "os.img.xz", errAs: new(*ChecksumConflictError), err: "two different SHA-256s",
		},
		{
			name: "two lines that agree", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				line := d.run("", "sha256sum", "os.img.xz")
				d.write("SHA256SUMS", line+d.run("", "sha256sum", "--tag", "os.img.xz")+strings.ToUpper(line[:64])+line[64:])
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
	})
}

// TestChecksumNameText (issue 31 item 3): every character after the
// marker is the name, blanks included, and escaped names are unescaped:
// a line for "my os.img.xz" is for it and for no other file.
func TestChecksumNameText(t *testing.T) {
	runChecksumCases(t, "", []checksumCase{
		{
			name: "a name with a blank in SHA256SUMS", images: []string{"my os.img.xz", "other.iso"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "other.iso", "my os.img.xz")) },
			image: "my os.img.xz", from: "SHA256SUMS", sum: sumOf("my os.img.xz"),
		},
		{
			name: "a name with a blank in its sidecar", images: []string{"my os.img.xz"},
			lists: func(d *listDir) { d.write("my os.img.xz.sha256", d.run("", "sha256sum", "my os.img.xz")) },
			image: "my os.img.xz", from: "my os.img.xz.sha256", sum: sumOf("my os.img.xz"),
		},
		{
			name: "a line for my os.img.xz is not for os.img.xz", images: []string{"my os.img.xz", "os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "my os.img.xz")) },
			image: "os.img.xz", notes: []string{"SHA256SUMS has no line for os.img.xz"},
		},
		{
			name: "binary mode, a blank in the name", images: []string{"my os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "--binary", "my os.img.xz")) },
			image: "my os.img.xz", from: "SHA256SUMS", sum: sumOf("my os.img.xz"),
		},
		{
			name: "a name ending in a blank", images: []string{"os.img.xz ", "os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "os.img.xz ", "os.img.xz")) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
			check: func(f *ChecksumFile) bool { return f.Line == 2 },
		},
		{
			name: "a backslash in the name, escaped by sha256sum", images: []string{`os\1.img.xz`},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", `os\1.img.xz`)) },
			image: `os\1.img.xz`, from: "SHA256SUMS", sum: sumOf(`os\1.img.xz`),
		},
		{
			name: "a newline in the name, escaped in the BSD form", images: []string{"os\n.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "--tag", "os\n.img.xz")) },
			image: "os\n.img.xz", from: "SHA256SUMS", sum: sumOf("os\n.img.xz"),
		},
		{
			name: "an unescaped backslash is the name's own", images: []string{`os\n.img.xz`},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.sums[`os\n.img.xz`]+`  os\n.img.xz`+"\n") },
			image: `os\n.img.xz`, from: "SHA256SUMS", sum: sumOf(`os\n.img.xz`),
		},
	})
}

// TestChecksumFormats (issue 31 item 4): the forms publishers' tools
// write, a clear-signed list's signed text, and lines of other algorithms
// or for other files passed over; a file that is no list is refused.
func TestChecksumFormats(t *testing.T) {
	gpg := gpgHome(t)
	signed := func(f *ChecksumFile) bool { return f.Signed }
	runChecksumCases(t, gpg, []checksumCase{
		{
			name: "sha256sum --tag", images: []string{"os.img.xz", "other.iso"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "--tag", "other.iso", "os.img.xz")) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "shasum -a 256", images: []string{"os.img.xz", "other.iso"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "shasum", "-a", "256", "other.iso", "os.img.xz")) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "shasum -a 256 --tag in the sidecar", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("os.img.xz.sha256", d.run("", "shasum", "-a", "256", "--tag", "os.img.xz")) },
			image: "os.img.xz", from: "os.img.xz.sha256", sum: sumOf("os.img.xz"),
		},
		{
			name: "gpg --clearsign of sha256sum's list", images: []string{"os.img.xz", "other.iso"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.clearsign(d.run("", "sha256sum", "other.iso", "os.img.xz")))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"), check: signed,
		},
		{
			name: "gpg --clearsign of the BSD form, dash-escaped lines", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.clearsign("-- made by a release script\n"+d.run("", "sha256sum", "--tag", "os.img.xz")))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"), check: signed,
		},
		{
			name: "only the signed text counts", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", zeros+"  os.img.xz\n"+d.clearsign(d.run("", "sha256sum", "os.img.xz"))+ones+"  os.img.xz\n")
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"), check: signed,
		},
		{
			name: "a signed message cut before its signature", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				s := d.clearsign(d.run("", "sha256sum", "os.img.xz"))
				d.write("SHA256SUMS", s[:strings.Index(s, pgpSigBegin)])
			},
			image: "os.img.xz", errAs: new(*ChecksumListError), err: "ends before its signature",
		},
		{
			name: "a SHA-512 line for another file", images: []string{"os.img.xz", "other.iso"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha512sum", "other.iso")+d.run("", "sha256sum", "os.img.xz"))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "a SHA-512 line for the image", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha512sum", "os.img.xz")+d.run("", "sha256sum", "os.img.xz"))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "BSD lines of other algorithms", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", d.run("", "sha512sum", "--tag", "os.img.xz")+d.run("", "md5sum", "--tag", "os.img.xz")+
					d.run("", "sha256sum", "--tag", "os.img.xz"))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "a sidecar with only a SHA-1 says it has no line", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("os.img.xz.sha", d.run("", "sha1sum", "os.img.xz")) },
			image: "os.img.xz", notes: []string{"os.img.xz.sha has no line for os.img.xz"},
		},
		{
			name: "CRLF line ends", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", strings.ReplaceAll(d.run("", "sha256sum", "os.img.xz"), "\n", "\r\n"))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "a sum alone in the sidecar", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("os.img.xz.sha256", strings.ToUpper(d.sums["os.img.xz"])+"\n") },
			image: "os.img.xz", from: "os.img.xz.sha256", sum: sumOf("os.img.xz"),
		},
		{
			name: "a sum alone in SHA256SUMS is nobody's", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.sums["os.img.xz"]+"\n") },
			image: "os.img.xz", notes: []string{"SHA256SUMS has no line for os.img.xz"},
		},
		{
			name: "comments, blank lines and a damaged line passed over", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("SHA256SUMS", "# made by hand\n\n"+zeros[:63]+"  os.img.xz\n"+d.run("", "sha256sum", "os.img.xz"))
			},
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
		},
		{
			name: "an error page saved as the sidecar", images: []string{"os.img.xz"},
			lists: func(d *listDir) { d.write("os.img.xz.sha256", "<html><body>404 Not Found</body></html>\n") },
			image: "os.img.xz", errAs: new(*ChecksumListError), err: "os.img.xz.sha256: holds no checksum lines",
		},
		{
			name: "the sidecar first", images: []string{"os.img.xz"},
			lists: func(d *listDir) {
				d.write("os.img.xz.sha256", d.run("", "sha256sum", "os.img.xz"))
				d.write("SHA256SUMS", zeros+"  os.img.xz\n")
			},
			image: "os.img.xz", from: "os.img.xz.sha256", sum: sumOf("os.img.xz"),
		},
		{
			name: "the decoded image's line", images: []string{"os.img.xz", "os.img"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "os.img")) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img"),
			check: func(f *ChecksumFile) bool { return f.Decoded && f.Name == "os.img" },
		},
		{
			name: "the file's line before the decoded image's", images: []string{"os.img.xz", "os.img"},
			lists: func(d *listDir) { d.write("SHA256SUMS", d.run("", "sha256sum", "os.img", "os.img.xz")) },
			image: "os.img.xz", from: "SHA256SUMS", sum: sumOf("os.img.xz"),
			check: func(f *ChecksumFile) bool { return !f.Decoded },
		},
	})
	if got, passed, err := FindChecksum("-", nil); got != nil || passed != nil || err != nil {
		t.Errorf("standard input: %v, %v, %v", got, passed, err)
	}
}
