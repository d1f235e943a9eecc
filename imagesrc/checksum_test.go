package imagesrc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindChecksum: the SHA-256 beside an image, in every form publishers
// give it; lists for other files are passed over, damaged ones refused.
func TestFindChecksum(t *testing.T) {
	a, b := strings.Repeat("a1", 32), strings.Repeat("B2", 32)
	tests := []struct {
		name  string
		files map[string]string
		want  string // the file it is read from, "" for none
		sum   string
		err   string
	}{
		{"none", nil, "", "", ""},
		{"lone sum in IMAGE.sha256", map[string]string{"os.img.xz.sha256": a + "\n"}, "os.img.xz.sha256", a, ""},
		{"sha256sum line", map[string]string{"os.img.xz.sha256": a + "  os.img.xz\n"}, "os.img.xz.sha256", a, ""},
		{"binary-mode line in IMAGE.sha", map[string]string{"os.img.xz.sha": a + " *os.img.xz\n"}, "os.img.xz.sha", a, ""},
		{"SHA256SUMS with others", map[string]string{"SHA256SUMS": a + "  other.iso\n" + b + "  os.img.xz\n"}, "SHA256SUMS", strings.ToLower(b), ""},
		{"SHA256SUMS for other files only", map[string]string{"SHA256SUMS": a + "  other.iso\n"}, "", "", ""},
		{"IMAGE.sha256 first", map[string]string{"os.img.xz.sha256": a + "\n", "SHA256SUMS": b + "  os.img.xz\n"}, "os.img.xz.sha256", a, ""},
		{"not a sum", map[string]string{"os.img.xz.sha256": "<html>404</html>\n"}, "", "", "not a SHA-256"},
		{"a list naming other files", map[string]string{"os.img.xz.sha256": a + "  other.img\n"}, "", "", "no line for the image"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := FindChecksum(filepath.Join(dir, "os.img.xz"))
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("err = %v, want %q", err, tt.err)
				}
			case err != nil:
				t.Errorf("err = %v", err)
			case tt.want == "" && got != nil:
				t.Errorf("found %+v", got)
			case tt.want != "" && (got == nil || got.Path != filepath.Join(dir, tt.want) || got.Sum != tt.sum):
				t.Errorf("found %+v, want %s from %s", got, tt.sum, tt.want)
			}
		})
	}
	if got, err := FindChecksum("-"); got != nil || err != nil {
		t.Errorf("standard input: %v, %v", got, err)
	}
}

func TestFileSHA256(t *testing.T) {
	data := genOSImage(3<<20+7, 9)
	path := tempImage(t, data)
	want := sha256.Sum256(data)
	got, err := FileSHA256(context.Background(), path)
	if err != nil || got != hex.EncodeToString(want[:]) {
		t.Errorf("FileSHA256 = %s, %v", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := FileSHA256(ctx, path); err == nil {
		t.Error("a cancelled hash succeeded")
	}
}
