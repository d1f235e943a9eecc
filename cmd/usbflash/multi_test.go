package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/flash"
)

// multiCard is one simulated reader of a many-card test.
type multiCard struct {
	name, opts string
	fails      bool
}

func (c multiCard) path(dir string) string { return filepath.Join(dir, c.name+".img") }

func (c multiCard) target(dir string) string {
	t := "sim:" + c.path(dir) + "?size=8MiB"
	if c.opts != "" {
		t += "&" + c.opts
	}
	return t
}

// TestWriteManyIsolatesFailures: one image to five readers, two of which
// fail mid-write: the others hold the image and are verified, the failed
// ones are named in the table, the JSON events and the report, and the
// exit code says some failed.
func TestWriteManyIsolatesFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := testImage(3<<20 + 777)
	imgPath := filepath.Join(dir, "os.img")
	os.WriteFile(imgPath, img, 0o644)
	cards := []multiCard{
		{"fast", "", false},
		{"slow", "speed=30MB/s", false},
		{"bad", "fault=medium-error:lba=3000,persistent", true},
		{"unplugged", "fault=disconnect:after=1MiB", true},
		{"latency", "latency=1ms", false},
	}
	for _, lag := range []string{"0", "8"} {
		t.Run("lag="+lag, func(t *testing.T) {
			report := filepath.Join(dir, "run"+lag+".json")
			args := []string{"write", imgPath, "--yes", "--json", "--lag", lag, "--report", report}
			for _, c := range cards {
				os.Remove(c.path(dir))
				args = append(args, c.target(dir))
			}
			r := runCLI(t, args...)
			if r.code != exitPartial {
				t.Fatalf("exit %d, want %d (some cards failed)\n%s\n%s", r.code, exitPartial, r.stdout, r.stderr)
			}
			failed := map[string]string{}
			sc := bufio.NewScanner(strings.NewReader(r.stdout))
			for sc.Scan() {
				var ev map[string]any
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
					t.Fatalf("not JSON: %s", sc.Text())
				}
				if ev["event"] == "card" && ev["error"] != "" {
					failed[ev["target"].(string)] = ev["error"].(string)
				}
			}
			for _, c := range cards {
				card, err := os.ReadFile(c.path(dir))
				if err != nil {
					t.Fatal(err)
				}
				holds := bytes.Equal(card[:len(img)], img)
				_, named := failed["sim:"+c.path(dir)]
				if c.fails != named || (!c.fails && !holds) {
					t.Errorf("%s: holds the image %v, reported failed %v (%q)", c.name, holds, named, failed)
				}
			}
			var s flash.Report
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &s); err != nil || len(s.Cards) != len(cards) {
				t.Fatalf("report: %v, %d cards", err, len(s.Cards))
			}
			for i, c := range cards {
				o := s.Cards[i]
				if (o.Error != "") != c.fails || o.Verified == c.fails || o.Capacity != 8<<20 {
					t.Errorf("report for %s: %+v", c.name, o)
				}
			}
			if !strings.Contains(s.Cards[2].Error, "LBA") {
				t.Errorf("the medium error names no LBA: %q", s.Cards[2].Error)
			}
		})
	}
}

// TestWriteManyRefusals: a write-protected card refuses the whole write,
// before anything is written to any card; with --skip-refused the others
// are written.
func TestWriteManyRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := testImage(1<<20 + 3)
	imgPath := filepath.Join(dir, "os.img")
	os.WriteFile(imgPath, img, 0o644)
	good := []multiCard{{"a", "", false}, {"b", "", false}}
	wp := multiCard{"wp", "wp=1", true}
	args := []string{"write", imgPath, "--yes"}
	for _, c := range append(good, wp) {
		args = append(args, c.target(dir))
	}
	// Create the cards first, with old contents to compare.
	for _, c := range append(good, wp) {
		if err := os.WriteFile(c.path(dir), bytes.Repeat([]byte{0xA5}, 8<<20), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := fileHash(t, good[0].path(dir))

	r := runCLI(t, args...)
	if r.code != exitRefused || !strings.Contains(r.stderr, "write-protected") {
		t.Fatalf("exit %d, want %d naming the write-protected card\n%s", r.code, exitRefused, r.stderr)
	}
	if fileHash(t, good[0].path(dir)) != before {
		t.Error("a card was written although another was refused")
	}

	r = runCLI(t, append(args, "--skip-refused")...)
	if r.code != exitPartial {
		t.Fatalf("--skip-refused: exit %d, want %d\n%s", r.code, exitPartial, r.stderr)
	}
	for _, c := range good {
		card, _ := os.ReadFile(c.path(dir))
		if !bytes.Equal(card[:len(img)], img) {
			t.Errorf("%s does not hold the image", c.name)
		}
	}
	if !strings.Contains(r.stdout, "TARGET") || !strings.Contains(r.stdout, "write-protected") {
		t.Errorf("the table does not name the refused card:\n%s", r.stdout)
	}
}

// TestWriteManyAllSucceed: exit 0 and every card verified.
func TestWriteManyAllSucceed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := testImage(2<<20 + 5)
	imgPath := filepath.Join(dir, "os.img")
	os.WriteFile(imgPath, img, 0o644)
	args := []string{"write", imgPath, "--yes"}
	cards := []multiCard{{"a", "", false}, {"b", "block=512&speed=50MB/s", false}, {"c", "", false}}
	for _, c := range cards {
		args = append(args, c.target(dir))
	}
	r := runCLI(t, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stdout, " yes "); n != len(cards) {
		t.Errorf("%d cards verified in the table, want %d:\n%s", n, len(cards), r.stdout)
	}
}

func TestWriteManyUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"write", "x.img"},
		{"write", "x.img", "--all", "sim:" + dir + "/a.img"},
		{"write", "x.img", "sim:" + dir + "/a.img", "sim:" + dir + "/a.img"},
		{"write", "x.img", "sim:" + dir + "/a.img", "--report", dir + "/r.txt"},
		{"write", "x.img", "sim:" + dir + "/a.img", "sim:" + dir + "/b.img", "--lag", "-1"},
	} {
		if r := runCLI(t, args...); r.code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}

// TestWriteManySlotsOfOneReader: two slots of one reader are written in one
// run over one open of the reader (its interface can be claimed once).
func TestWriteManySlotsOfOneReader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := testImage(2<<20 + 9)
	imgPath := filepath.Join(dir, "os.img")
	os.WriteFile(imgPath, img, 0o644)
	card := filepath.Join(dir, "two.img")
	for _, p := range []string{card, card + ".lun1"} {
		os.WriteFile(p, make([]byte, 8<<20), 0o644)
	}
	r := runCLI(t, "write", imgPath, "--yes", "sim:"+card+"?luns=2&lun=0", "sim:"+card+"?luns=2&lun=1")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, p := range []string{card, card + ".lun1"} {
		b, _ := os.ReadFile(p)
		if !bytes.Equal(b[:len(img)], img) {
			t.Errorf("%s does not hold the image", p)
		}
	}
	r = runCLI(t, "write", imgPath, "--yes", "sim:"+card+"?luns=2", "sim:"+card+"?luns=2&lun=1")
	if r.code != exitUsage {
		t.Errorf("a slot left unnamed: exit %d\n%s", r.code, r.stderr)
	}
}
