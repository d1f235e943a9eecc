// Package scratch gives a test a directory of its own that is removed
// when the test ends, as testing.T.TempDir does, also under Wine: Go
// 1.25's os.RemoveAll deletes Windows files with a POSIX-semantics
// delete (FILE_DISPOSITION_POSIX_SEMANTICS) that Wine 8 does not
// implement ("unlinkat ...: Invalid function."), so TempDir's cleanup
// fails every test that made a file. Removing entry by entry with
// os.Remove (DeleteFile, RemoveDirectory) works on both.
package scratch

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// Dir is a new directory for tb, removed with everything in it when tb
// ends.
func Dir(tb testing.TB) string {
	tb.Helper()
	if runtime.GOOS != "windows" {
		return tb.TempDir()
	}
	dir, err := os.MkdirTemp("", "usbflash-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := removeAll(dir); err != nil {
			tb.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// removeAll removes dir entry by entry, the deepest first.
func removeAll(dir string) error {
	var paths []string
	if err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}); err != nil {
		return err
	}
	slices.Reverse(paths) // a directory after what it holds
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}
