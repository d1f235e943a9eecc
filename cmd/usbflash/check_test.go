package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/fakecheck/fakecases"
)

// checkSummary is what the test reads of check's JSON summary.
type checkSummary struct {
	Event      string `json:"event"`
	UsableSize int64  `json:"usable_size"`
	Fake       bool   `json:"fake"`
	Kind       string `json:"kind"`
	Restored   bool   `json:"restored"`
}

// TestCheckContract: what `check` and `write --check` say and how they
// exit, for a genuine card, a fake too small for the image and a fake it
// fits in. The whole fake-card table runs in flash (TestCheckTable) and
// fakecheck (TestProbeTable); this is the CLI's side of it.
func TestCheckContract(t *testing.T) {
	t.Parallel()
	const imageSize = 4 << 20
	image := writeFile(t, "os.img", testImage(imageSize))
	before := testImage(2 << 20)
	maxCache := fmt.Sprint(fakecases.MaxCache)
	var cases []fakecases.Case
	kinds := map[string]bool{}
	for _, fc := range fakecases.All() {
		kind := "genuine"
		switch {
		case fc.Fake() && fc.Real < imageSize:
			kind = "too small"
		case fc.Fake():
			kind = "fits"
		}
		if !kinds[kind] {
			kinds[kind] = true
			cases = append(cases, fc)
		}
	}
	for _, fc := range cases {
		t.Run(fc.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			card := filepath.Join(dir, "card.img")
			if err := os.WriteFile(card, before, 0o644); err != nil {
				t.Fatal(err)
			}
			target := "sim:" + card + "?" + fc.SimOptions()

			r := runCLI(t, "check", "--json", "--max-cache", maxCache, target)
			want := exitOK
			if fc.Fake() {
				want = exitFake
			}
			if r.code != want {
				t.Fatalf("check: exit %d, want %d\n%s%s", r.code, want, r.stdout, r.stderr)
			}
			var sum checkSummary
			for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				if strings.Contains(line, `"event":"summary"`) {
					if err := json.Unmarshal([]byte(line), &sum); err != nil {
						t.Fatal(err)
					}
				}
			}
			if sum.Kind != fc.Kind || sum.UsableSize != fc.Real || sum.Fake != fc.Fake() || !sum.Restored {
				t.Fatalf("check: %+v, want kind %s usable_size %d, restored", sum, fc.Kind, fc.Real)
			}
			if got, err := readPrefix(card, len(before)); err != nil || !bytes.Equal(got, before) {
				t.Fatalf("check changed the card's first %d bytes (%v)", len(before), err)
			}

			// write --check: refused when the image does not fit in what
			// the card holds, written with a warning when it does.
			r = runCLI(t, "write", "--check", "--yes", "--max-cache", maxCache, image, target)
			out := r.stdout + r.stderr
			switch {
			case !fc.Fake():
				if r.code != exitOK || !strings.Contains(out, "is genuine") {
					t.Fatalf("write --check of a genuine card: exit %d\n%s", r.code, out)
				}
			case fc.Real < imageSize:
				if r.code != exitFake || !strings.Contains(out, fmt.Sprintf("(%d bytes", fc.Real)) || !strings.Contains(out, "nothing was written") {
					t.Fatalf("write --check of a fake card too small for the image: exit %d\n%s", r.code, out)
				}
				if got, _ := readPrefix(card, len(before)); !bytes.Equal(got, before) {
					t.Fatal("a refused write --check changed the card")
				}
			default:
				if r.code != exitOK || !strings.Contains(out, "Warning: ") || !strings.Contains(out, fmt.Sprintf("(%d bytes", fc.Real)) {
					t.Fatalf("write --check of a fake card the image fits in: exit %d\n%s", r.code, out)
				}
			}
		})
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

// TestParseMaxCacheSaysWhatIsTaken: a value that is refused says why and
// what range is taken.
func TestParseMaxCacheSaysWhatIsTaken(t *testing.T) {
	const taken = "; want 0 (trust the first read-back) or a size such as 1GiB, any up to 8 EiB (one larger than the card sees through all of it)"
	for _, tc := range []struct {
		in, why string
	}{
		{"1PiB", `size "1PiB": unknown unit "pib" (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)`},
		{"lots", `size "lots": want a number with an optional unit, like 4MiB`},
		{"9999999999T", `size "9999999999T": not a whole number of bytes that fits in 63 bits`},
	} {
		_, err := parseMaxCache(tc.in)
		if want := "--max-cache: " + tc.why + taken; err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", tc.in, err, want)
		}
	}
}
