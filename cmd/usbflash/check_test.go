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

// TestCheckContract: what `check` and `write --check` say and how they
// exit, for a fake card an image fits in. The whole fake-card table runs
// in fakecheck (TestProbeTable), the check's behaviour in fakecheck
// (TestRun) and write --check's in flash (TestRunCheck); this is the CLI's
// side of it.
func TestCheckContract(t *testing.T) {
	t.Parallel()
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
