package diskdev_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/diskdev"
)

// An image written to a disk through the engine and verified: here a file
// opened as a drive is (no buffering, write-through), which is how the
// writer runs where no drive may be written; a card is
// \\.\PhysicalDriveN, as an administrator.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "diskdev-example-")
	path := filepath.Join(dir, "card.img")
	os.WriteFile(path, make([]byte, 1<<20), 0o644)
	defer os.Remove(dir)
	defer os.Remove(path)

	ctx := context.Background()
	d, err := diskdev.Open(ctx, path, diskdev.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	img := bytes.Repeat([]byte("an OS image "), 30000)
	if _, err := pipeline.Write(ctx, d, bytes.NewReader(img), pipeline.WriteOptions{TransferSize: 64 << 10, ExpectedSize: int64(len(img)), Sync: true}); err != nil {
		fmt.Println(err)
		return
	}
	_, err = pipeline.Verify(ctx, d, bytes.NewReader(img), int64(len(img)), pipeline.VerifyOptions{TransferSize: 64 << 10})
	fmt.Println(d.BlockSize(), d.BlockCount(), err)
	// Output: 512 2048 <nil>
}
