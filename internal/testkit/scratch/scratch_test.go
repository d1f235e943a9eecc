package scratch

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveAll(t *testing.T) {
	dir := Dir(t)
	root := filepath.Join(dir, "a")
	if err := os.MkdirAll(filepath.Join(root, "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a/x", "a/b/y", "a/b/c/z"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := removeAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("%s still there (%v)", root, err)
	}
}
