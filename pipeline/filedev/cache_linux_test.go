package filedev

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/lib/aligned"
)

// TestCacheModes: CacheBypass is O_DIRECT and stays so even when a
// transfer cannot be direct; CacheUse goes through the page cache; both
// read the file, read-only, as the reader benchmark's kernel paths do, and
// neither falls back to the other.
func TestCacheModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	img := testImage(64*512, 6)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		cache  Cache
		direct bool
	}{
		{"bypass", CacheBypass, true},
		{"use", CacheUse, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := Open(path, Options{ReadOnly: true, Cache: tc.cache})
			if err != nil {
				if tc.cache == CacheBypass && strings.Contains(err.Error(), "no O_DIRECT") {
					t.Skip(err)
				}
				t.Fatal(err)
			}
			defer dev.Close()
			if dev.Direct() != tc.direct {
				t.Errorf("Direct() = %v, want %v", dev.Direct(), tc.direct)
			}
			checkDirect(t, dev)
			back := aligned.Bytes(len(img))
			if err := dev.ReadBlocks(ctx, 0, back); err != nil || !bytes.Equal(back, img) {
				t.Fatalf("ReadBlocks = %v, or read other bytes", err)
			}
			if err := dev.DropCache(); err != nil {
				t.Errorf("DropCache: %v", err)
			}
			// A transfer the kernel refuses as direct is not retried
			// through the cache: the device stays what it was opened as.
			calls := 0
			err = dev.retryBuffered(func() error {
				calls++
				return &os.PathError{Op: "read", Path: path, Err: syscall.EINVAL}
			})
			if !errors.Is(err, syscall.EINVAL) || calls != 1 || dev.Direct() != tc.direct {
				t.Errorf("EINVAL: err = %v after %d calls, Direct() = %v; want it returned at once", err, calls, dev.Direct())
			}
		})
	}
}

// TestCacheBypassWithoutODirect: where the filesystem has no O_DIRECT,
// CacheBypass fails instead of reading through the cache.
func TestCacheBypassWithoutODirect(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	f, err := os.CreateTemp("/dev/shm", "usbflash-filedev-*.img")
	if err != nil {
		t.Skip(err)
	}
	defer os.Remove(f.Name())
	f.Truncate(8 * 512)
	f.Close()
	if d, err := Open(f.Name(), Options{ReadOnly: true, Cache: CacheBypass}); err == nil {
		direct := d.Direct()
		d.Close()
		if !direct {
			t.Fatal("CacheBypass opened without O_DIRECT")
		}
		t.Skip("this kernel's tmpfs takes O_DIRECT")
	}
}

// TestDropCache: the pages a buffered read left in the page cache are
// gone after DropCache, so the next read goes to the medium.
func TestDropCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(path, testImage(256*512, 7), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, err := Open(path, Options{ReadOnly: true, Cache: CacheUse})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := dev.f.Sync(); err != nil { // written back: clean pages drop
		t.Fatal(err)
	}
	if err := dev.ReadBlocks(context.Background(), 0, aligned.Bytes(256*512)); err != nil {
		t.Fatal(err)
	}
	before := residentPages(t, path)
	if before == 0 {
		t.Skip("the filesystem keeps no pages in the page cache")
	}
	if err := dev.DropCache(); err != nil {
		t.Fatal(err)
	}
	if after := residentPages(t, path); after != 0 {
		t.Errorf("%d of the file's pages cached after DropCache (%d before)", after, before)
	}
}

// residentPages counts the file's pages in the page cache (mincore of a
// mapping that is never touched, so it holds no page itself).
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(m)
	pageSize := os.Getpagesize()
	vec := make([]byte, (len(m)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Skip(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestCreateWithoutODirect: a new file target on a filesystem without
// O_DIRECT (tmpfs, where Linux creates the file before it refuses the
// flag) is created, sized and written through the page cache, and Close
// leaves it; it was refused as "file exists" before.
func TestCreateWithoutODirect(t *testing.T) {
	dir := writableTmpfs(t)
	p := filepath.Join(dir, "new.img")
	d, err := Open(p, Options{Size: 16 * 512})
	if err != nil {
		t.Fatalf("a new file on tmpfs: %v", err)
	}
	if d.Direct() {
		d.Close()
		t.Skip("this kernel's tmpfs takes O_DIRECT (Linux 6.6 and later); e2e TestFileTargetOnTmpfs runs on 6.1")
	}
	data := testImage(512, 9)
	if err := d.WriteBlocks(context.Background(), 3, data); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || len(got) != 16*512 || string(got[3*512:4*512]) != string(data) {
		t.Fatalf("the file after Close: %d bytes, %v", len(got), err)
	}
}

// writableTmpfs is a new directory on a tmpfs outside /dev (where no file
// target may be created), for a test that needs a filesystem without
// O_DIRECT; the test is skipped where there is none (the e2e guest's /tmp
// is one: TestFileTargetOnTmpfs).
func writableTmpfs(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[2] != "tmpfs" || f[1] == "/dev" || strings.HasPrefix(f[1], "/dev/") {
			continue
		}
		if dir, err := os.MkdirTemp(f[1], "usbflash-filedev-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	t.Skip("no writable tmpfs outside /dev")
	return ""
}
