package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/filedev"
)

// An image written to a block device and read back: here a file: target
// (filedev) of 1 MiB; a usbms.LUN or a fanout.Group goes in its place
// alike. The image need not be whole blocks: the last one is padded with
// zeros, and its first transfer is written last.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "pipeline-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	dev, err := filedev.Open(filepath.Join(dir, "card.img"), filedev.Options{Size: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	image := bytes.Repeat([]byte("an OS image "), 30000) // 360000 bytes
	ctx := context.Background()
	res, err := pipeline.Write(ctx, dev, bytes.NewReader(image), pipeline.WriteOptions{
		TransferSize: 64 << 10, ExpectedSize: int64(len(image)), Sync: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Bytes, res.BytesWritten, res.Blocks)
	v, err := pipeline.Verify(ctx, dev, bytes.NewReader(image), int64(len(image)), pipeline.VerifyOptions{TransferSize: 64 << 10})
	fmt.Println(v.Bytes, err)
	// Output:
	// 360000 360448 704
	// 360000 <nil>
}

// A read-back that differs from the image is a *VerifyError naming the
// first byte that differs and its block.
func ExampleVerify() {
	dir, err := os.MkdirTemp("", "pipeline-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	dev, err := filedev.Open(filepath.Join(dir, "card.img"), filedev.Options{Size: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	ctx := context.Background()
	image := bytes.Repeat([]byte{0xA5}, 8192)
	if _, err := pipeline.Write(ctx, dev, bytes.NewReader(image), pipeline.WriteOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	other := bytes.Clone(image)
	other[5000] = 0x5A
	_, err = pipeline.Verify(ctx, dev, bytes.NewReader(other), int64(len(other)), pipeline.VerifyOptions{})
	var ve *pipeline.VerifyError
	if errors.As(err, &ve) {
		fmt.Printf("byte %d (LBA %d): want %#x, read %#x\n", ve.Offset, ve.LBA, ve.Want, ve.Got)
	}
	// Output:
	// byte 5000 (LBA 9): want 0x5a, read 0xa5
}
