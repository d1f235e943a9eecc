// Package readonly makes, for tests, a file the test process can read but
// not write, as a user's read-only image or a locked-down disk is: the
// kernel refuses to open it for writing. Root passes permission checks,
// so for root the file is made immutable instead where the system has
// that; where neither works the test is skipped.
package readonly

import (
	"os"
	"testing"
)

// File makes the existing file at path read-only for this process until
// the test ends, or skips the test when it cannot.
func File(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() == 0 {
		immutable(t, path)
		return
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(path, 0o644) })
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skipf("%s opens for writing even with mode 0444", path)
	}
}
