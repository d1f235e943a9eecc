package readonly

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsImmutable is FS_IMMUTABLE_FL of <linux/fs.h>, which x/sys does not
// name.
const fsImmutable = 0x10

// immutable sets the file's immutable attribute (chattr +i), which stops
// root too, and clears it when the test ends so its directory can go.
func immutable(t testing.TB, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags|fsImmutable)
	}
	if err != nil {
		t.Skipf("running as root, and %s cannot be made immutable: %v", path, err)
	}
	t.Cleanup(func() {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags); err != nil {
			t.Errorf("clearing the immutable attribute of %s: %v", path, err)
		}
	})
}
