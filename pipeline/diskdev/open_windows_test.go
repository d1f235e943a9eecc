package diskdev

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/testkit/scratch"
	"github.com/usbflash/usbflash/pipeline"
)

// TestWriteImageToFile opens a regular file as Open opens a drive
// (FILE_FLAG_NO_BUFFERING | FILE_FLAG_WRITE_THROUGH, the same code after
// the open but for the drive's IOCTLs) and writes an image through the
// engine: the file holds it byte-exact, and a misaligned buffer goes
// through an aligned copy. Under Wine this is the whole Windows writer
// that can run: Wine has no physical drives.
func TestWriteImageToFile(t *testing.T) {
	const transfer = 64 << 10
	path := filepath.Join(scratch.Dir(t), "card.img")
	if err := os.WriteFile(path, bytes.Repeat([]byte{0xff}, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 7*transfer+1024)
	for i := range img {
		img[i] = byte(i*31 + i>>10)
	}
	ctx := context.Background()
	d, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.BlockSize() != 512 || d.BlockCount() != 4096 || d.WriteProtected() {
		t.Errorf("%s: %d blocks of %d, write-protected %v", d, d.BlockCount(), d.BlockSize(), d.WriteProtected())
	}
	if _, err := pipeline.Write(ctx, d, bytes.NewReader(img), pipeline.WriteOptions{TransferSize: transfer, ExpectedSize: int64(len(img)), Sync: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Verify(ctx, d, bytes.NewReader(img), int64(len(img)), pipeline.VerifyOptions{TransferSize: transfer}); err != nil {
		t.Errorf("verify: %v", err)
	}
	odd := aligned.Bytes(4096 + 1)[1:]
	copy(odd, "a misaligned block")
	if err := d.WriteBlocks(ctx, 3000, odd); err != nil {
		t.Errorf("misaligned write: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(img)], img) {
		t.Error("the file does not hold the image")
	}
	if !bytes.Equal(got[3000*512:3000*512+4096], odd) {
		t.Error("the misaligned block is not in the file")
	}
	if !bytes.Equal(got[len(img):3000*512], bytes.Repeat([]byte{0xff}, 3000*512-len(img))) {
		t.Error("bytes past the image were changed")
	}
}

func TestOpenReadOnlyAndMissing(t *testing.T) {
	path := filepath.Join(scratch.Dir(t), "card.img")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(context.Background(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteBlocks(context.Background(), 0, aligned.Bytes(512)); err == nil {
		t.Error("a disk opened read-only was written")
	}
	if _, err := Open(context.Background(), filepath.Join(scratch.Dir(t), "none"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file = %v", err)
	}
	if _, err := Open(context.Background(), scratch.Dir(t), Options{}); err == nil {
		t.Error("a directory opened as a disk")
	}
}
