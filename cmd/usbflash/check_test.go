package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

// checkSummary is what the test reads of check's JSON summary.
type checkSummary struct {
	Event      string `json:"event"`
	UsableSize int64  `json:"usable_size"`
	Fake       bool   `json:"fake"`
	Kind       string `json:"kind"`
	Restored   bool   `json:"restored"`
}

// checkFake: what `check` and `write --check` say and how they
// exit, for a fake card an image fits in. The whole fake-card table runs
// in fakecheck (TestProbeTable), the check's behaviour in fakecheck
// (TestRun) and write --check's in flash (TestRunCheck); this is the CLI's
// side of it.
func checkFake(t *testing.T) {
	const imageSize = 4 << 20
	image := writeFile(t, "os.img", testImage(imageSize))
	before := testImage(2 << 20)
	card := writeFile(t, "card.img", before)
	target := "sim:" + card + "?size=256MiB&fake=drop&real=100MiB&fake-cache=8MiB"

	r := runCLI(t, "check", "--json", "--max-cache", "16MiB", target)
	if r.code != exitFake {
		t.Fatalf("check: exit %d, want %d\n%s%s", r.code, exitFake, r.stdout, r.stderr)
	}
	var sum checkSummary
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.Contains(line, `"event":"summary"`) {
			if err := json.Unmarshal([]byte(line), &sum); err != nil {
				t.Fatal(err)
			}
		}
	}
	if sum.Kind != "drop" || sum.UsableSize != 100<<20 || !sum.Fake || !sum.Restored {
		t.Fatalf("check: %+v, want kind drop usable_size %d, restored", sum, 100<<20)
	}
	if got, err := readPrefix(card, len(before)); err != nil || !bytes.Equal(got, before) {
		t.Fatalf("check changed the card's first %d bytes (%v)", len(before), err)
	}

	// write --check: written with a warning, the image fitting in what
	// the card holds.
	r = runCLI(t, "write", "--check", "--yes", "--max-cache", "16MiB", image, target)
	if out := r.stdout + r.stderr; r.code != exitOK || !strings.Contains(out, "Warning: ") || !strings.Contains(out, fmt.Sprintf("(%d bytes", 100<<20)) {
		t.Fatalf("write --check of a fake card the image fits in: exit %d\n%s", r.code, out)
	}
}

// readPrefix reads the first n bytes of a (large, sparse) file.
func readPrefix(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	_, err = f.ReadAt(b, 0)
	return b, err
}

// checkTimerFlushedFake: a wrap-around fake behind a write-back cache
// that its own timer flushes (never SYNCHRONIZE CACHE), as issue 41's
// device-mapper fake on the USB gadget: check and write --check name it
// (exit 8, with what was seen), every block the check wrote is put back;
// a check that cannot put its blocks back prints a restore command that
// names the card, and puts them back.
func checkTimerFlushedFake(t *testing.T) {
	const real = 16 << 20
	fake := "size=64MiB&fake=wrap&real=16MiB&write-back=1MiB&write-back-every=8"
	image := writeFile(t, "os.img", testImage(real+(1<<20))) // larger than what the card holds
	tests := []struct {
		name     string
		args     func(target string) []string
		opts     string
		wantCode int
		wantSaid []string
	}{
		{name: "check", args: func(target string) []string { return []string{"check", "--max-cache", "4MiB", target} }, opts: fake,
			wantCode: exitFake, wantSaid: []string{"is FAKE", "holds 16.8 MB", "wrap around onto the start", fmt.Sprintf("Usable size: %d bytes", real),
				"every block it wrote was put back and read back the same"}},
		{name: "write --check", args: func(target string) []string {
			return []string{"write", "--check", "--yes", "--max-cache", "4MiB", image, target}
		}, opts: fake, wantCode: exitFake, wantSaid: []string{"is fake", "wrap around onto the start", "nothing was written"}},
		// The reader drops off the bus while the check writes: its blocks
		// go to a file, and the command that puts them back names the
		// card as it was given.
		{name: "write --check, put back failed", args: func(target string) []string {
			return []string{"write", "--check", "--yes", "--max-cache", "4MiB", image, target}
		}, opts: "size=64MiB&fault=disconnect:after=2MiB", wantCode: exitDevice, wantSaid: []string{"usbflash restore "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before := testImage(2 << 20)
			card := writeFile(t, "card.img", before)
			target := "sim:" + card + "?" + tt.opts
			r := runCLI(t, tt.args(target)...)
			out := r.stdout + r.stderr
			if r.code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.wantCode, out)
			}
			for _, want := range tt.wantSaid {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "usbflash restore") {
				// The command is the last line of the advice: its
				// target is the card's, quoted for a shell.
				line := out[strings.LastIndex(out, "usbflash restore"):]
				line = strings.TrimSpace(strings.SplitN(line, "\n", 2)[0])
				if !strings.HasSuffix(line, shellWord(target)) {
					t.Errorf("restore command %q does not name the card %s", line, shellWord(target))
				}
				// The command as printed (but the sim's fault) puts
				// back what the check wrote.
				words := shellWords(t, line)
				if r := runCLI(t, "restore", words[2], "sim:"+card); r.code != exitOK {
					t.Fatalf("%s: exit %d\n%s", line, r.code, r.stderr)
				}
				if got, err := readPrefix(card, len(before)); err != nil || !bytes.Equal(got, before) {
					t.Errorf("after %s the card does not hold what it held before the check (%v)", line, err)
				}
				return
			}
			if got, err := readPrefix(card, len(before)); err != nil || !bytes.Equal(got, before) {
				t.Fatalf("the card's first %d bytes changed (%v)", len(before), err)
			}
		})
	}
}

// TestCheckCommand: what check and write --check say and how they exit.
func TestCheckCommand(t *testing.T) {
	parallel(t,
		subtest{"a fake card an image fits in", checkFake},
		subtest{"a fake behind a timer-flushed cache", checkTimerFlushedFake},
	)
}
