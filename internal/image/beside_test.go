package image

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindBlockMap(t *testing.T) {
	for _, tc := range []struct {
		image string
		maps  []string
		want  string
	}{
		{"os.img.xz", []string{"os.img.xz.bmap", "os.img.bmap"}, "os.img.xz.bmap"},
		{"os.img.xz", []string{"os.img.bmap", "os.bmap"}, "os.img.bmap"},
		{"os.img.xz", []string{"os.bmap"}, "os.bmap"},
		{"os.img.xz", []string{"other.bmap"}, ""},
		{"os", nil, ""},
	} {
		dir := t.TempDir()
		for _, m := range tc.maps {
			if err := os.WriteFile(filepath.Join(dir, m), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want := ""
		if tc.want != "" {
			want = filepath.Join(dir, tc.want)
		}
		if got := findBlockMap(filepath.Join(dir, tc.image)); got != want {
			t.Errorf("findBlockMap(%s) with %v = %q, want %q", tc.image, tc.maps, got, want)
		}
	}
}
