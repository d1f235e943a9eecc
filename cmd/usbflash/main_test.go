package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// result is one finished run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	return runCLIContext(t, context.Background(), nil, args...)
}

// runCLIContext runs the command in-process. When stdout is given, it also
// receives the output as it is written.
func runCLIContext(t *testing.T, ctx context.Context, stdout io.Writer, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	var w io.Writer = &out
	if stdout != nil {
		w = io.MultiWriter(&out, stdout)
	}
	code := run(ctx, args, strings.NewReader(""), w, &errOut)
	return result{code, out.String(), errOut.String()}
}

// testImage is deterministic, OS-like content: a boot sector, zero runs,
// text and noise, and a length that is not a multiple of 512.
func testImage(size int) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewSource(int64(size)))
	copy(b, "usbflash test image")
	b[510], b[511] = 0x55, 0xaa
	for off := 4096; off < size; off += 64 << 10 {
		end := min(off+16<<10, size)
		if (off/(64<<10))%3 == 0 {
			r.Read(b[off:end])
		} else {
			for i := off; i < end; i++ {
				b[i] = "the quick brown fox jumps over the lazy dog\n"[i%44]
			}
		}
	}
	return b
}

// compress is data in format (raw, gzip, xz, zstd, zip, bzip2).
func compress(t *testing.T, format string, data []byte) []byte {
	t.Helper()
	return testimage.Compress(t, format, data)
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// jsonEvents parses --json output, one object per line.
func jsonEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		events = append(events, m)
	}
	return events
}

func lastEvent(t *testing.T, out, name string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, e := range jsonEvents(t, out) {
		if e["event"] == name {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no %q event in output:\n%s", name, out)
	}
	return found
}

func listWithoutUSB(t *testing.T) {
	// A machine without /dev/bus/usb (a container), and a build without
	// a USB backend, as the backends say so.
	for _, kind := range []error{usbdev.ErrNoUSBAccess, usbdev.ErrNoUSBSupport} {
		list := func(context.Context) ([]usbdev.Info, error) {
			return nil, &usbdev.Error{Op: "listing USB devices", Kind: kind, Err: syscall.ENOENT}
		}
		for _, args := range [][]string{{"list"}, {"list", "--json"}} {
			var out, errOut bytes.Buffer
			code := runApp(context.Background(), &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, listUSB: list}, args)
			var js struct{ Devices []any }
			if code != exitOK || len(args) == 1 && !strings.Contains(out.String(), "No USB readers") ||
				len(args) == 2 && (json.Unmarshal(out.Bytes(), &js) != nil || js.Devices == nil) {
				t.Errorf("%v, %v: exit %d, stdout %q, stderr %q", kind, args, code, out.String(), errOut.String())
			}
		}
	}
}

// listShowsDisks: list shows the disk: targets beside the readers,
// also where a build has no USB (macOS and Windows today), and says so
// when the disks cannot be listed, without failing.
func listShowsDisks(t *testing.T) {
	noUSB := func(context.Context) ([]usbdev.Info, error) {
		return nil, &usbdev.Error{Op: "listing USB devices", Kind: usbdev.ErrNoUSBSupport, Err: errors.New("built without USB")}
	}
	card := drive.WholeDisk{Target: "disk:/dev/rdisk4", Node: "/dev/rdisk4", Name: "Generic- SD/MMC", Bus: "USB", Size: 31914983424,
		Whole: true, Removable: true, Volumes: []drive.Volume{{Node: "/dev/disk4s1", MountPoint: "/Volumes/bootfs"}}}
	run := func(listDisks func(context.Context) ([]drive.WholeDisk, error), args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runApp(context.Background(), &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, listUSB: noUSB, listDisks: listDisks}, args)
		return code, out.String(), errOut.String()
	}
	one := func(context.Context) ([]drive.WholeDisk, error) { return []drive.WholeDisk{card}, nil }
	code, out, _ := run(one, "list")
	if code != exitOK || !strings.Contains(out, "No USB readers") || !strings.Contains(out, "disk:/dev/rdisk4  USB  Generic- SD/MMC  31.9 GB  mounted: /dev/disk4s1 on /Volumes/bootfs") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, out, _ = run(one, "list", "--json")
	var js struct {
		Devices []any
		Disks   []struct{ Target, Bus string }
	}
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil || js.Devices == nil || len(js.Disks) != 1 || js.Disks[0].Target != "disk:/dev/rdisk4" {
		t.Errorf("list --json: exit %d\n%s", code, out)
	}
	failing := func(context.Context) ([]drive.WholeDisk, error) { return nil, errors.New("diskutil: exit status 1") }
	code, out, errOut := run(failing, "list")
	if code != exitOK || strings.Contains(out, "Disks") || !strings.Contains(errOut, "listing disks: diskutil: exit status 1") {
		t.Errorf("list, disks unlisted: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

func TestConfirmationAtATerminal(t *testing.T) {
	t.Parallel()
	img := testImage(256 << 10)
	image := writeFile(t, "os.img", img)
	for _, tt := range []struct {
		answer string
		want   int
	}{
		{"n\n", exitRefused}, {"\n", exitRefused}, {"", exitRefused}, {"yes please\n", exitRefused},
		{"y\n", exitOK}, {"YES\n", exitOK},
	} {
		card := filepath.Join(t.TempDir(), "card.img")
		var out, errOut bytes.Buffer
		a := &app{stdin: strings.NewReader(tt.answer), stdout: &out, stderr: &errOut, interactive: true}
		code := runApp(context.Background(), a, []string{"write", "--quiet", "--transfer-size", "64KiB", image, "sim:" + card + "?size=1MiB&serial=CARD42"})
		if code != tt.want {
			t.Errorf("answer %q: exit %d, want %d (%s)", tt.answer, code, tt.want, errOut.String())
		}
		// The question names the card, so a person can recognise it.
		if q := errOut.String(); !strings.Contains(q, "CARD42") || !strings.Contains(q, "1.05 MB") || !strings.Contains(q, "[y/N]") {
			t.Errorf("question %q does not identify the card", q)
		}
		got, _ := os.ReadFile(card)
		if written := len(got) >= len(img) && bytes.Equal(got[:len(img)], img); written != (tt.want == exitOK) {
			t.Errorf("answer %q: image written = %v", tt.answer, written)
		}
	}
}

// holds says the file at path starts with img.
func holds(path string, img []byte) bool {
	b, err := os.ReadFile(path)
	return err == nil && len(b) >= len(img) && bytes.Equal(b[:len(img)], img)
}

// shellWords splits a shell command line as sh does for the examples:
// blanks between words, single and double quotes, a # comment.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'' || c == '"':
			j := strings.IndexByte(line[i+1:], c)
			if j < 0 {
				t.Fatalf("unterminated quote: %q", line)
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '#' && !inWord:
			return words
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// subtest is a test run as a subtest of another under its name.
type subtest struct {
	name string
	test func(*testing.T)
}

// parallel runs each of tests as a parallel subtest of t.
func parallel(t *testing.T, tests ...subtest) {
	t.Parallel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.test(t)
		})
	}
}

// TestMain runs main when the binary is started as usbflash (TestProcess
// and the documents' examples run it through a link of that name), and
// the tests otherwise.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "usbflash" {
		main()
	}
	os.Exit(m.Run())
}
