package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/testkit/testfifo"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
)

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// xzBytes is data as the xz command compresses it.
func xzBytes(t *testing.T, data []byte) []byte {
	t.Helper()
	cmd := exec.Command("xz", "-c", "-T1")
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("xz: %v", err)
	}
	return out
}

// downloadCase is a write checked against a publisher's SHA-256: the
// image, how it reaches the write, the sum, and what must come of it.
type downloadCase struct {
	name    string
	input   string // "file", "fifo", "devfd" (a pipe as bash's <(...) gives it), "stdin", "stdin-file"
	xz      bool   // the image as os.img.xz, else raw os.img
	sha256  func(file, img []byte) string
	lists   map[string]func(file, img []byte) string // written beside the image
	matched string                                   // the note saying what matched; "" for a mismatch
}

func fileSum(file, _ []byte) string { return hexSum(file) }
func imageSum(_, img []byte) string { return hexSum(img) }
func noSum(_, _ []byte) string      { return strings.Repeat("0", 64) }

// checkDownloadOutcome checks a write's outcome: the card holds the image
// and the note says what matched, or the write failed as a download that
// is not the publisher's (an image error naming both of its sums) with
// the card's first transfer left zeroed.
func checkDownloadOutcome(t *testing.T, tc downloadCase, card string, img, file []byte, notes []string, err error) {
	t.Helper()
	got, rerr := os.ReadFile(card)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if tc.matched != "" {
		if err != nil {
			t.Fatalf("write: %v\nnotes:\n%s", err, strings.Join(notes, "\n"))
		}
		if !bytes.Equal(got[:len(img)], img) {
			t.Error("the card does not hold the image")
		}
		if !strings.Contains(strings.Join(notes, "\n"), tc.matched) {
			t.Errorf("notes:\n%s\nwant one saying %q", strings.Join(notes, "\n"), tc.matched)
		}
		return
	}
	if failure.Of(err) != failure.Image || !strings.Contains(fmt.Sprint(err), "SHA-256 "+hexSum(file)) {
		t.Fatalf("write: %v (class %v), want an image error naming the file's SHA-256", err, failure.Of(err))
	}
	if tc.xz && !strings.Contains(err.Error(), "decodes to an image with SHA-256 "+hexSum(img)) {
		t.Errorf("write: %v, want the decoded image's SHA-256 too", err)
	}
	if !bytes.Equal(got[:512], make([]byte, 512)) || !bytes.Equal(got[1<<20:len(img)], img[1<<20:]) {
		t.Error("the card is not the image with its first transfer zeroed")
	}
}

// TestRunDownloadStreams (issue 31 items 5, 5b and 5c): a stream (a FIFO,
// a pipe as <(...) names it, standard input as curl | usbflash gives it)
// is hashed as it is read, once, with the publisher's sum on the command
// line or in a sidecar beside the FIFO; a sum of the decoded image matches
// too, for a file as for a stream, before the first transfer is written;
// a download matching neither leaves the card unbootable.
func TestRunDownloadStreams(t *testing.T) {
	t.Parallel()
	img := testpattern.Bytes(3<<20+700, 11)
	compressed := xzBytes(t, img)
	const fileMatched, imageMatched = "The image file matches the SHA-256 ", "The decoded image matches the SHA-256 "
	sidecar := func(line func(f, i []byte) string) map[string]func(f, i []byte) string {
		return map[string]func(f, i []byte) string{"os.img.xz.sha256": line}
	}
	for _, tc := range []downloadCase{
		{name: "a FIFO, the file's sum", input: "fifo", xz: true, sha256: fileSum, matched: fileMatched},
		{name: "<(...), the file's sum", input: "devfd", xz: true, sha256: fileSum, matched: fileMatched},
		{name: "a FIFO, its sidecar", input: "fifo", xz: true,
			lists: sidecar(func(f, _ []byte) string { return hexSum(f) + "  os.img.xz\n" }), matched: fileMatched},
		{name: "a FIFO, the decoded image's sum", input: "fifo", xz: true, sha256: imageSum, matched: imageMatched},
		{name: "<(...), the decoded image's sum", input: "devfd", xz: true, sha256: imageSum, matched: imageMatched},
		{name: "a file, the decoded image's sum", input: "file", xz: true, sha256: imageSum, matched: imageMatched},
		{name: "a file, a sidecar with the decoded image's sum", input: "file", xz: true,
			lists: sidecar(func(_, i []byte) string { return hexSum(i) + "\n" }), matched: imageMatched},
		{name: "a file, SHA256SUMS with a line for os.img", input: "file", xz: true,
			lists:   map[string]func(f, i []byte) string{"SHA256SUMS": func(_, i []byte) string { return hexSum(i) + "  os.img\n" }},
			matched: imageMatched},
		{name: "a file, the file's sum", input: "file", xz: true, sha256: fileSum, matched: fileMatched},
		{name: "a raw FIFO", input: "fifo", sha256: fileSum, matched: fileMatched},
		{name: "a FIFO, neither sum", input: "fifo", xz: true, sha256: noSum},
		{name: "<(...), neither sum", input: "devfd", xz: true, sha256: noSum},
		{name: "a file, neither sum", input: "file", xz: true, sha256: noSum},
		{name: "a raw FIFO, another sum", input: "fifo", sha256: noSum},
		{name: "standard input, the file's sum", input: "stdin", xz: true, sha256: fileSum, matched: fileMatched},
		{name: "standard input, the decoded image's sum", input: "stdin", xz: true, sha256: imageSum, matched: imageMatched},
		{name: "standard input, neither", input: "stdin", xz: true, sha256: noSum},
		{name: "standard input, raw", input: "stdin", sha256: fileSum, matched: fileMatched},
		{name: "standard input from a file, the file's sum", input: "stdin-file", xz: true, sha256: fileSum, matched: fileMatched},
		{name: "standard input from a file, the decoded image's sum", input: "stdin-file", xz: true, sha256: imageSum, matched: imageMatched},
		{name: "standard input from a file, neither", input: "stdin-file", xz: true, sha256: noSum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file, name := img, "os.img"
			if tc.xz {
				file, name = compressed, "os.img.xz"
			}
			dir := t.TempDir()
			for list, body := range tc.lists {
				if err := os.WriteFile(filepath.Join(dir, list), []byte(body(file, img)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			card := filepath.Join(dir, "card.img")
			sum := ""
			if tc.sha256 != nil {
				sum = tc.sha256(file, img)
			}
			imageRef, stdin := streamImage(t, tc.input, filepath.Join(dir, name), file), (*os.File)(nil)
			if strings.HasPrefix(tc.input, "stdin") {
				imageRef, stdin = "-", stdinOf(t, tc.input, imageRef, file)
			}
			notes, err := writeStream(t, imageRef, stdin, card, sum)
			checkDownloadOutcome(t, tc, card, img, file, notes, err)
			var mismatch *image.ChecksumMismatchError
			if errors.As(err, &mismatch) && tc.xz && (mismatch.Got != hexSum(file) || mismatch.GotDecoded != hexSum(img)) {
				t.Errorf("mismatch %+v", mismatch)
			}
		})
	}
}

// newSimCard is a new 8 MiB sim: card's backing file and spec.
func newSimCard(t *testing.T) (string, drive.Spec) {
	t.Helper()
	card := filepath.Join(t.TempDir(), "card.img")
	spec, err := drive.Parse("sim:" + card + "?size=8MiB")
	if err != nil {
		t.Fatal(err)
	}
	return card, spec
}

// writeStream writes the image to a new 8 MiB card and returns the notes.
func writeStream(t *testing.T, imageRef string, stdin *os.File, card, sum string) ([]string, error) {
	t.Helper()
	spec, err := drive.Parse("sim:" + card + "?size=8MiB")
	if err != nil {
		t.Fatal(err)
	}
	log := &noteLog{}
	_, err = Run(context.Background(), Config{Image: image.Ref{Path: imageRef, Stdin: stdin, SHA256: sum}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}},
		[]drive.Spec{spec})
	return log.all(), err
}

// noteLog keeps the notes of a session, whose goroutines report.
type noteLog struct {
	mu        sync.Mutex
	notes     []string
	checksums []Checksum
}

func (l *noteLog) Observe(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch e := e.(type) {
	case Note:
		l.notes = append(l.notes, e.Message)
	case Checksum:
		l.checksums = append(l.checksums, e)
	}
}

func (l *noteLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notes
}

// stdinOf is what a write of "-" reads: a pipe's read end (curl |
// usbflash), or (stdin-file) the file at path, as a shell's < gives it.
func stdinOf(t *testing.T, input, path string, data []byte) *os.File {
	t.Helper()
	if input == "stdin-file" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	return pipeOf(t, data)
}

// pipeOf is the read end of a pipe a goroutine writes data into.
func pipeOf(t *testing.T, data []byte) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Close()
		w.Write(data) // a reader that stops early is the test's failure, not this one's
	}()
	t.Cleanup(func() { r.Close() })
	return r
}

// streamImage gives the image's bytes the way input says: a file at
// path, a FIFO at path fed by a goroutine, or a pipe's /dev/fd path.
func streamImage(t *testing.T, input, path string, data []byte) string {
	t.Helper()
	switch input {
	case "stdin":
		return ""
	case "file", "stdin-file":
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	case "fifo":
		testfifo.Make(t, path, data)
		return path
	case "devfd":
		return fmt.Sprintf("/dev/fd/%d", pipeOf(t, data).Fd())
	}
	t.Fatalf("unknown input %q", input)
	return ""
}

// gpgRun runs gpg with the GNUPGHOME home in dir; a missing gpg fails the
// test.
func gpgRun(t *testing.T, home, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("gpg", append([]string{"--batch", "--homedir", home, "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// gpgKeys makes a signing key in a new GnuPG home and exports its public
// key to a keyring file.
func gpgKeys(t *testing.T) (home, keys string) {
	t.Helper()
	home = t.TempDir()
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("gpgconf", "--homedir", home, "--kill", "gpg-agent").Run() })
	gpgRun(t, home, "", "--quick-gen-key", "Test <t@example.invalid>", "default", "default", "never")
	keys = filepath.Join(t.TempDir(), "keys.asc")
	gpgRun(t, home, "", "--armor", "--output", keys, "--export", "t@example.invalid")
	return home, keys
}

// TestRunDownloadSignature (issue 31): with the publisher's keys, a write
// whose SHA256SUMS is clear-signed by them writes and says by which key;
// one whose signed text was changed is refused as an image error naming
// the list before any byte reaches the card, though its sum is right. Keys
// with no list to check (no checksum looked for, a sum given) are a usage
// error naming both settings, before the card is opened.
func TestRunDownloadSignature(t *testing.T) {
	t.Parallel()
	home, keys := gpgKeys(t)
	img := testpattern.Bytes(2<<20+300, 5)
	for _, tc := range []struct {
		name     string
		tamper   bool // the signed text changed after signing (a line for another file)
		noSHA256 bool
		sum      bool // the image's right sum given
		matched  string
		conflict failure.Setting
	}{
		{name: "good signature", matched: "SHA256SUMS's signature was checked: a good signature by Test <t@example.invalid> (key "},
		{name: "signed text changed", tamper: true},
		{name: "no checksum looked for", noSHA256: true, conflict: image.SettingKeyringNoSHA256},
		{name: "a sum given", sum: true, conflict: image.SettingKeyringSHA256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			list := hexSum(img) + "  os.img\n" + strings.Repeat("1", 64) + "  other.iso\n"
			if err := os.WriteFile(filepath.Join(dir, "os.img"), img, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS.txt"), []byte(list), 0o644); err != nil {
				t.Fatal(err)
			}
			gpgRun(t, home, dir, "--output", "SHA256SUMS", "--clearsign", "SHA256SUMS.txt")
			if tc.tamper {
				signed, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
				if err != nil {
					t.Fatal(err)
				}
				signed = bytes.Replace(signed, []byte(strings.Repeat("1", 64)), []byte(strings.Repeat("2", 64)), 1)
				if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), signed, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			card := filepath.Join(dir, "card.img")
			spec, err := drive.Parse("sim:" + card + "?size=8MiB")
			if err != nil {
				t.Fatal(err)
			}
			log := &noteLog{}
			cfg := Config{Image: image.Ref{Path: filepath.Join(dir, "os.img"), SHA256Keyring: keys, NoSHA256: tc.noSHA256}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2}, Output: Output{Observer: log}}
			if tc.sum {
				cfg.Image.SHA256 = hexSum(img)
			}
			_, err = Run(context.Background(), cfg, []drive.Spec{spec})
			if tc.conflict != "" {
				if failure.SettingOf(err) != tc.conflict || !errors.Is(err, image.ErrChecksumConflict) || failure.Of(err) != failure.Usage {
					t.Fatalf("write: %v, want a usage error of %q", err, tc.conflict)
				}
				if _, err := os.Stat(card); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the card was opened: %v", err)
				}
				factsonly.Check(t, err.Error())
				return
			}
			got, rerr := os.ReadFile(card)
			if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				t.Fatal(rerr)
			}
			notes := strings.Join(log.all(), "\n")
			if tc.matched != "" {
				if err != nil || !bytes.Equal(got[:len(img)], img) || !strings.Contains(notes, tc.matched) {
					t.Fatalf("write: %v\nnotes:\n%s\nwant the image written and a note saying %q", err, notes, tc.matched)
				}
				return
			}
			var se *image.ChecksumSignatureError
			if !errors.As(err, &se) || !errors.Is(err, image.ErrBadSignature) || failure.Of(err) != failure.Image ||
				!strings.Contains(err.Error(), filepath.Join(dir, "SHA256SUMS")) {
				t.Fatalf("write: %v (class %v), want a bad signature of SHA256SUMS", err, failure.Of(err))
			}
			if len(bytes.Trim(got, "\x00")) != 0 {
				t.Error("the card was written to")
			}
		})
	}
}
