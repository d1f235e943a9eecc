package filedev

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/readonly"
	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline/blockdev"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/lib/flock"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

func TestDeviceOpen(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.img")
	if err := os.WriteFile(existing, make([]byte, 10*512+100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		path       string
		opts       Options
		wantBlocks int64 // -1: want ErrBadTarget
		kind       error // of the refusal
	}{
		{"missing without size", filepath.Join(dir, "missing.img"), Options{}, -1, ErrNeedsSize},
		{"missing, read-only", filepath.Join(dir, "missing.img"), Options{ReadOnly: true, Size: 8192}, -1, ErrMissing},
		{"size not whole blocks", filepath.Join(dir, "odd.img"), Options{Size: 1000}, -1, ErrBadSize},
		{"negative size", filepath.Join(dir, "neg.img"), Options{Size: -512}, -1, ErrBadSize},
		{"a directory", dir, Options{}, -1, ErrWrongType},
		{"in a missing directory", filepath.Join(dir, "no", "such", "dir.img"), Options{Size: 8192}, -1, ErrNoDirectory},
		{"smaller than the file", existing, Options{Size: 4 * 512}, -1, ErrWouldShrink},
		{"larger than the file, read-only", existing, Options{Size: 64 * 512, ReadOnly: true}, -1, ErrShortReadOnly},
		{"create", filepath.Join(dir, "new.img"), Options{Size: 8192}, 16, nil},
		{"existing keeps its size", existing, Options{}, 10, nil},
		{"existing, read-only", existing, Options{ReadOnly: true}, 10, nil},
		{"existing extended", existing, Options{Size: 64 * 512}, 64, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := Open(tc.path, tc.opts)
			if tc.wantBlocks < 0 {
				if err == nil {
					dev.Close()
				}
				var te *TargetError
				if !errors.Is(err, ErrBadTarget) || !errors.As(err, &te) || !errors.Is(err, tc.kind) {
					t.Fatalf("err = %v, want ErrBadTarget, a *TargetError of kind %v", err, tc.kind)
				}
				if errors.Is(err, ErrWouldShrink) && te.FileSize != 10*512+100 {
					t.Errorf("FileSize = %d, want the file's %d bytes", te.FileSize, 10*512+100)
				}
				factsonly.Check(t, err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			if dev.BlockSize() != 512 || dev.BlockCount() != tc.wantBlocks {
				t.Errorf("%d blocks of %d, want %d of 512", dev.BlockCount(), dev.BlockSize(), tc.wantBlocks)
			}
		})
	}
}

// TestOpenLocks: a second writer of the same file, through any name, is
// refused while the first holds it, and gets it once the first closes.
func TestOpenLocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "card.img")
	first, err := Open(path, Options{Size: 8192})
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if second, err := Open(link, Options{}); !errors.Is(err, flock.ErrLocked) {
		if err == nil {
			second.Close()
		}
		t.Fatalf("second writer: %v, want ErrLocked", err)
	}
	first.Close()
	second, err := Open(link, Options{})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.Close()
}

func TestDeviceBounds(t *testing.T) {
	dev, err := Open(filepath.Join(t.TempDir(), "b.img"), Options{Size: 8 * 512})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	buf := aligned.Bytes(2 * 512)
	for _, tc := range []struct {
		lba int64
		p   []byte
		ok  bool
	}{
		{0, buf, true},
		{6, buf, true},
		{7, buf, false},
		{-1, buf, false},
		{0, buf[:100], false},
	} {
		if err := dev.WriteBlocks(ctx, tc.lba, tc.p); (err == nil) != tc.ok {
			t.Errorf("write of %d bytes at %d: err = %v", len(tc.p), tc.lba, err)
		}
		if err := dev.ReadBlocks(ctx, tc.lba, tc.p); (err == nil) != tc.ok {
			t.Errorf("read of %d bytes at %d: err = %v", len(tc.p), tc.lba, err)
		}
	}
}

// testImage is the shared test pattern.
func testImage(n int, seed byte) []byte { return testpattern.Bytes(n, seed) }

// TestOpenReadOnlyFile: a file the kernel will not open for writing opens
// for reading, says it is write-protected, keeps its size whatever size is
// asked for, and refuses writes with blockdev.ErrWriteProtected, leaving
// the file as it was.
func TestOpenReadOnlyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locked.img")
	img := testImage(8*512, 4)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	readonly.File(t, path)
	for _, opts := range []Options{{}, {Size: 64 * 512}} {
		dev, err := Open(path, opts)
		if err != nil {
			t.Fatalf("size %d: %v", opts.Size, err)
		}
		if !dev.WriteProtected() || dev.BlockCount() != 8 {
			t.Errorf("size %d: WriteProtected() = %v with %d blocks, want true with 8", opts.Size, dev.WriteProtected(), dev.BlockCount())
		}
		ctx := context.Background()
		err = dev.WriteBlocks(ctx, 0, aligned.Bytes(512))
		if !errors.Is(err, blockdev.ErrWriteProtected) {
			t.Errorf("WriteBlocks = %v, want ErrWriteProtected", err)
		}
		back := aligned.Bytes(len(img))
		if err := dev.ReadBlocks(ctx, 0, back); err != nil || !bytes.Equal(back, img) {
			t.Errorf("ReadBlocks = %v, or the file changed", err)
		}
		dev.Close()
	}
}

func TestWritableFileIsNotProtected(t *testing.T) {
	dev, err := Open(filepath.Join(t.TempDir(), "w.img"), Options{Size: 8 * 512})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if dev.WriteProtected() {
		t.Error("WriteProtected() = true for a file just created")
	}
}

// TestProtected: a write the kernel refuses as read-only is write
// protection and still the kernel's error; other failures are not.
func TestProtected(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		want  bool
	}{
		{syscall.EROFS, true},
		{syscall.EPERM, true},
		{syscall.EACCES, true},
		{syscall.EIO, false},
		{syscall.EINVAL, false},
	} {
		err := protected(&os.PathError{Op: "write", Path: "f.img", Err: tc.errno})
		if errors.Is(err, blockdev.ErrWriteProtected) != tc.want || !errors.Is(err, tc.errno) {
			t.Errorf("%v: err = %v, write-protected %v, want %v", tc.errno, err, errors.Is(err, blockdev.ErrWriteProtected), tc.want)
		}
		if err.Error() != "write f.img: "+tc.errno.Error() {
			t.Errorf("%v: message %q, want the kernel's", tc.errno, err)
		}
	}
	if protected(nil) != nil {
		t.Error("protected(nil) != nil")
	}
}

// TestBadBlock: the kernel's EIO on a read is a bad block and still the
// kernel's error; other failures are not.
func TestBadBlock(t *testing.T) {
	for _, tc := range []struct {
		errno syscall.Errno
		want  bool
	}{
		{syscall.EIO, true},
		{syscall.ENODEV, false},
		{syscall.EINVAL, false},
	} {
		err := badBlock(&os.PathError{Op: "read", Path: "/dev/sdb", Err: tc.errno})
		if errors.Is(err, blockdev.ErrBadBlock) != tc.want || !errors.Is(err, tc.errno) {
			t.Errorf("%v: err = %v, bad block %v, want %v", tc.errno, err, errors.Is(err, blockdev.ErrBadBlock), tc.want)
		}
	}
	if badBlock(nil) != nil {
		t.Error("badBlock(nil) != nil")
	}
}
