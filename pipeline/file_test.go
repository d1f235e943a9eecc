package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

func TestFileDeviceRoundTrip(t *testing.T) {
	for _, size := range []int{0, 1, 4096, 3*testTransfer + 513} {
		path := filepath.Join(t.TempDir(), "card.img")
		dev, err := OpenFileDevice(path, FileOptions{Size: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		img := testImage(size, 10)
		ctx := context.Background()
		res, err := Write(ctx, dev, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(size), Sync: true})
		if err != nil {
			t.Fatalf("size %d: Write: %v", size, err)
		}
		if _, err := Verify(ctx, dev, bytes.NewReader(img), int64(size), VerifyOptions{TransferSize: testTransfer}); err != nil {
			t.Errorf("size %d: Verify: %v", size, err)
		}
		if _, err := VerifyHash(ctx, dev, int64(size), sha256.Sum256(img), VerifyOptions{TransferSize: testTransfer}); err != nil {
			t.Errorf("size %d: VerifyHash: %v", size, err)
		}
		checkDirect(t, dev)
		if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		padded := roundUp(size, 512)
		if len(got) != 1<<20 || !bytes.Equal(got[:size], img) || !isZero(got[size:]) || res.BytesWritten != int64(padded) {
			t.Errorf("size %d: file holds %d bytes, image equal %v", size, len(got), bytes.Equal(got[:size], img))
		}
	}
}

func TestFileDeviceOpen(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.img")
	if err := os.WriteFile(existing, make([]byte, 10*512+100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		path       string
		opts       FileOptions
		wantBlocks int64 // -1: want an error
	}{
		{"missing without size", filepath.Join(dir, "missing.img"), FileOptions{}, -1},
		{"size not whole blocks", filepath.Join(dir, "odd.img"), FileOptions{Size: 1000}, -1},
		{"negative size", filepath.Join(dir, "neg.img"), FileOptions{Size: -512}, -1},
		{"a directory", dir, FileOptions{}, -1},
		{"create", filepath.Join(dir, "new.img"), FileOptions{Size: 8192}, 16},
		{"existing keeps its size", existing, FileOptions{}, 10},
		{"existing extended", existing, FileOptions{Size: 64 * 512}, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := OpenFileDevice(tc.path, tc.opts)
			if tc.wantBlocks < 0 {
				if err == nil {
					dev.Close()
					t.Fatalf("opened, want an error")
				}
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

func TestFileDeviceBounds(t *testing.T) {
	dev, err := OpenFileDevice(filepath.Join(t.TempDir(), "b.img"), FileOptions{Size: 8 * 512})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	buf := alignedBytes(2 * 512)
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
