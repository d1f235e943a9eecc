package dist

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The Windows zip is the same bytes whatever the order of its files, and
// holds them dated by the commit.
func TestZipIsTheSameWhateverTheOrder(t *testing.T) {
	mtime := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := []file{{Tar: "usbflash.exe", Data: []byte("MZ..."), Mode: 0o755}, {Tar: "README.md", Data: []byte("# usbflash"), Mode: 0o644}}
	var one, two bytes.Buffer
	if err := writeZip(&one, a, mtime); err != nil {
		t.Fatal(err)
	}
	if err := writeZip(&two, []file{a[1], a[0]}, mtime); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one.Bytes(), two.Bytes()) {
		t.Fatal("two zips of the same files differ")
	}
	r, err := zip.NewReader(bytes.NewReader(one.Bytes()), int64(one.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.File) != 2 || r.File[0].Name != "README.md" || r.File[1].Name != "usbflash.exe" || !r.File[1].Modified.Equal(mtime) {
		t.Errorf("entries %v", r.File)
	}
}

// The formula and the manifest name each archive at its URL with its
// SHA-256, the formula by CPU, the manifest by Scoop's architecture keys.
func TestFormulaAndManifest(t *testing.T) {
	base := "https://example.invalid/v1.2.3"
	mac := []archive{{f: Foreign{"darwin", "amd64"}, name: "usbflash-1.2.3-darwin-amd64.tar.gz", sha256: strings.Repeat("a", 64)},
		{f: Foreign{"darwin", "arm64"}, name: "usbflash-1.2.3-darwin-arm64.tar.gz", sha256: strings.Repeat("b", 64)}}
	var rb bytes.Buffer
	if err := homebrewFormula(&rb, "1.2.3", base, mac); err != nil {
		t.Fatal(err)
	}
	rbs := rb.String()
	for _, want := range []string{`version "1.2.3"`, `depends_on "libusb"`,
		"on_intel do\n    url \"" + base + "/usbflash-1.2.3-darwin-amd64.tar.gz\"\n    sha256 \"" + strings.Repeat("a", 64) + "\"",
		"on_arm do\n    url \"" + base + "/usbflash-1.2.3-darwin-arm64.tar.gz\"\n    sha256 \"" + strings.Repeat("b", 64) + "\"",
		`bin.install "usbflash"`} {
		if !strings.Contains(rbs, want) {
			t.Errorf("the formula lacks %q:\n%s", want, rbs)
		}
	}
	win := []archive{{f: Foreign{"windows", "amd64"}, name: "usbflash-1.2.3-windows-amd64.zip", sha256: strings.Repeat("c", 64)},
		{f: Foreign{"windows", "arm64"}, name: "usbflash-1.2.3-windows-arm64.zip", sha256: strings.Repeat("d", 64)}}
	var js bytes.Buffer
	if err := scoopManifest(&js, "1.2.3", base, win); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version      string
		Bin          string
		Architecture map[string]struct{ URL, Hash string }
	}
	if err := json.Unmarshal(js.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m.Version != "1.2.3" || m.Bin != "usbflash.exe" || m.Architecture["64bit"].Hash != strings.Repeat("c", 64) ||
		m.Architecture["arm64"].URL != base+"/usbflash-1.2.3-windows-arm64.zip" {
		t.Errorf("manifest %+v", m)
	}
}
