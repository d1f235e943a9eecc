package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
)

// maxCacheTaken is what a refused --max-cache says is taken.
const maxCacheTaken = "; want 0 (trust the first read-back) or a size such as 1GiB, any up to 8 EiB (one larger than the card sees through all of it)"

func TestCommandLineMistakesExit2(t *testing.T) {
	t.Parallel()
	image := writeFile(t, "os.img", testImage(4096))
	card := "sim:" + filepath.Join(t.TempDir(), "card.img") + "?size=1MiB"
	tests := []struct {
		args []string
		want string // in the message
	}{
		{[]string{"bogus"}, `unknown command "bogus"; see 'usbflash --help'`},
		{[]string{"verison"}, `unknown command "verison" (did you mean "version"?)`},
		{[]string{"completion", "bogus"}, `unknown command "bogus"; see 'usbflash completion --help'`},
		{[]string{"--bogus"}, "see 'usbflash --help'"},
		{[]string{"write", "--buffers", "abc", image, card}, `--buffers "abc": want a whole number; see 'usbflash write --help'`},
		{[]string{"write", "--transfer-size", "0", image, card}, "--transfer-size 0: want at least one block"},
		{[]string{"write", "--transfer-size", "64GiB", image, card}, "more than the 1 GiB the buffers may take"},
		{[]string{"write", "--transfer-size", "16GiB", image, card}, "more than the 1 GiB the buffers may take"},
		{[]string{"write", "--transfer-size", "8EiB", image, card}, "--transfer-size"},
		{[]string{"write", "--buffers", "100000", image, card}, "with 100000 buffers need 100002 buffers"},
		{[]string{"verify", "--transfer-size", "64GiB", image, card}, "more than the 1 GiB the buffers may take"},
		{[]string{"info", "/dev/sda"}, "Write disk:/dev/sda for the whole disk"},
		{[]string{"info", "./c.img"}, "Write file:./c.img for an image file"},
		{[]string{"info", `\\.\PhysicalDrive2`}, `Write disk:\\.\PhysicalDrive2 for the whole disk`},
		{[]string{"write", image, "disk:"}, "disk: needs a disk"},
		{[]string{"version", "extra"}, "version needs no arguments, got 1 argument"},
		{[]string{"completion", "bash", "extra"}, "bash needs no arguments, got 1 argument; see 'usbflash completion bash --help'"},
		{[]string{"completion", "zsh", "a", "b"}, "zsh needs no arguments, got 2 arguments"},
		{[]string{"write", image}, "write needs IMAGE and at least one TARGET (got 1 argument(s))"},
		{[]string{"write", image, "/dev/sdb"}, `target "/dev/sdb" is a path, which a target names as disk:/dev/sdb`},
		{[]string{"write", "--transfer-size", "fast", image, card}, `--transfer-size: size "fast": want a number with an optional unit`},
		{[]string{"write", "--buffers", "1", image, card}, "--buffers: 1 is fewer than 2"},
		{[]string{"write", "--no-such-flag", image, card}, "unknown flag: --no-such-flag; see 'usbflash write --help'"},
		{[]string{"info"}, "info needs a TARGET, got 0 arguments"},
		{[]string{"info", "usb:zz:00"}, "VID and PID must be hexadecimal"},
		{[]string{"list", "extra"}, "list needs no arguments, got 1 argument"},
		{[]string{"write", "--verify-hash", "md5", image, card}, "--verify-hash md5: want xxh3 or sha256"},
		{[]string{"write", "--no-verify", "--verify-hash", "sha256", image, card}, "--verify-hash has nothing to check"},
		// A --max-cache that is refused says why and what range is taken.
		{[]string{"check", "--max-cache", "1PiB", card}, `--max-cache: size "1PiB": unknown unit "pib" (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)` + maxCacheTaken},
		{[]string{"check", "--max-cache", "lots", card}, `--max-cache: size "lots": want a number with an optional unit, like 4MiB` + maxCacheTaken},
		{[]string{"check", "--max-cache", "9999999999T", card}, `--max-cache: size "9999999999T": not a whole number of bytes that fits in 63 bits` + maxCacheTaken},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := runCLI(t, tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, tt.want)
			}
			if strings.Contains(r.stderr, "strconv") || strings.Contains(r.stderr, "usbflash usbflash") {
				t.Errorf("stderr %q leaks internals", r.stderr)
			}
			// The same mistake under --json is an error event on stdout.
			r = runCLI(t, append(tt.args, "--json")...)
			if e := lastEvent(t, r.stdout, "error"); e["code"] != float64(exitUsage) || e["name"] != "usage" {
				t.Errorf("--json: error event %v", e)
			}
		})
	}
}

// TestHelpAndCompletion: what the commands that only print say: the
// version, help states the memory bound and both transports, completion
// offers targets, sizes and scripts.
func TestHelpAndCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, "unused", nil)
	card := filepath.Join(dir, "card.img")
	writeFileAt(t, card)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "write", "os.img", ""}, "sim:\tthe simulated reader"},
		{[]string{"__complete", "write", "os.img", "sim:" + dir + "/ca"}, "sim:" + card},
		{[]string{"__complete", "info", "file:" + dir + "/"}, "file:" + card},
		{[]string{"__complete", "bench", "sim:" + dir + "/ca"}, "sim:" + card},
		{[]string{"__complete", "write", "--transfer-size", ""}, "4MiB\t"},
		{[]string{"__complete", "verify", "--transfer-size", ""}, "1MiB\t"},
		{[]string{"completion", "bash"}, "bash completion"},
		{[]string{"write", "--help"}, "at most 1 GiB"},
		{[]string{"verify", "--help"}, "at most 1 GiB"},
		{[]string{"--help"}, "Bulk-Only Transport, or USB Attached SCSI"},
	}
	for _, tt := range tests {
		r := runCLI(t, tt.args...)
		if r.code != exitOK || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("%q: exit %d, stdout %q; want %q", tt.args, r.code, r.stdout, tt.want)
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if r := runCLI(t, args...); r.code != exitOK || r.stdout != "usbflash "+versionString()+"\n" {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

func writeFileAt(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatalf("creating %s: %v", path, err)
	}
}

// TestPanicIsAnInternalError: a bug in a command exits 1 (internal) with a
// JSON error event, never 2 (which says the user made a mistake).
func TestPanicIsAnInternalError(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut,
		watchFinder: func(context.Context) ([]drive.Found, error) { panic("a bug") }}
	code := runApp(context.Background(), a, []string{"write", writeFile(t, "os.img", testImage(1<<20)), "--watch", "--yes", "--json"})
	if e := lastEvent(t, out.String(), "error"); code != exitInternal || e["name"] != "internal" {
		t.Errorf("exit %d, event %v", code, e)
	}
}
