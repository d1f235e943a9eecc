package main

import (
	"fmt"

	"usbflash/imagesrc"
	"usbflash/internal/units"
)

// checkImageSize refuses an image smaller than one transfer: no OS image is
// that small, and what is (an error page, a checksum file, a truncated
// download) would still overwrite the card's partition table. It is a
// refusal (exit 3) rather than a bad image (exit 4) because the bytes may be
// exactly what the user meant, a boot sector or a test pattern: --force
// writes them. Only a size known for a fact is judged; a stream of unknown
// size is judged by its decoder as it is read.
func checkImageSize(src *imagesrc.Source, transfer int, force bool) error {
	if force || !src.SizeExact || src.Size >= int64(transfer) {
		return nil
	}
	return &refusedError{fmt.Sprintf("image is only %d bytes (%s), less than one %s transfer: too small to be an OS image; "+
		"pass --force to write it anyway; nothing was written",
		src.Size, imagesrc.Describe(src.Head()), units.FormatSize(int64(transfer)))}
}
