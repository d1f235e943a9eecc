//go:build unix

package filedev_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/usbflash/usbflash/pipeline/filedev"
)

// A regular file as a block device: created at the size asked, written
// and read in whole blocks, and locked while open, so a second open of the
// same target is refused (ErrLocked; the Unix systems have the lock), as
// is a path that cannot be a target (ErrBadTarget).
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "filedev-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "card.img")
	dev, err := filedev.Open(path, filedev.Options{Size: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	fmt.Println(dev.BlockCount(), "blocks of", dev.BlockSize())

	ctx := context.Background()
	block := make([]byte, dev.BlockSize())
	copy(block, "boot sector")
	if err := dev.WriteBlocks(ctx, 0, block); err != nil {
		fmt.Println(err)
		return
	}
	if err := dev.Sync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	back := make([]byte, dev.BlockSize())
	if err := dev.ReadBlocks(ctx, 0, back); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", back[:11])

	_, err = filedev.Open(path, filedev.Options{})
	fmt.Println(errors.Is(err, filedev.ErrLocked))
	_, err = filedev.Open(dir, filedev.Options{})
	fmt.Println(errors.Is(err, filedev.ErrBadTarget))
	// Output:
	// 2048 blocks of 512
	// boot sector
	// true
	// true
}
