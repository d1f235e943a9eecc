package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/pipeline/filedev"
)

// TestWriteFileDevice runs write and both verifies against a file: target.
func TestWriteFileDevice(t *testing.T) {
	for _, size := range []int{0, 1, 4096, 3*testTransfer + 513} {
		path := filepath.Join(t.TempDir(), "card.img")
		dev, err := filedev.Open(path, filedev.Options{Size: 1 << 20})
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
