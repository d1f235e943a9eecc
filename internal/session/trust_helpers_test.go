package session

import (
	"context"
	"errors"
	"os"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
)

// The sessions and errors trust_test.go drives, in one place: its tables
// name what a command line gives, these run it.

// trustOpts are the image options a row gives write and verify alike.
type trustOpts struct {
	image, os, catalog string
	stdin              *os.File
	sha256             string
	noSHA256           bool
	keyring            string
	cache              string
}

// runWrite writes the image to the one card spec names.
func runWrite(ctx context.Context, o trustOpts, spec drive.Spec, obs Observer) error {
	_, err := Run(ctx, Config{Image: image.Ref{Path: o.image, OS: o.os, Catalog: o.catalog, Stdin: o.stdin, SHA256: o.sha256, NoSHA256: o.noSHA256, SHA256Keyring: o.keyring, Cache: o.cache, HTTP: instantHTTP()}, Engine: Engine{TransferSize: 1 << 20, Buffers: 2, Verify: true}, Output: Output{Observer: obs}},
		[]drive.Spec{spec})
	return err
}

// runVerify compares the card spec names with the image, repairing it
// when asked; image is the image as the outcome names it.
func runVerify(ctx context.Context, o trustOpts, spec drive.Spec, repair bool, obs Observer) (imagePath string, err error) {
	res, err := Verify(ctx, VerifyConfig{Image: image.Ref{Path: o.image, OS: o.os, Catalog: o.catalog, Stdin: o.stdin, SHA256: o.sha256, NoSHA256: o.noSHA256, SHA256Keyring: o.keyring, Cache: o.cache, HTTP: instantHTTP()}, Repair: repair, Observer: obs}, spec)
	if err != nil {
		return "", err
	}
	return res.Image, nil
}

// noSignedSum: a keyring found no signed SHA-256 for the image.
func noSignedSum(err error) bool { return errors.As(err, new(*image.NoSignedSumError)) }

// statedSize: the image's size is not the one stated for it (a catalog's
// entry), which is blamed.
func statedSize(err error) bool {
	return errors.Is(err, image.ErrStatedSize) && !errors.Is(err, image.ErrDamaged) && !errors.Is(err, image.ErrTruncated)
}

// repairStdin: a repair of an image on standard input, refused.
func repairStdin(err error) bool { return errors.Is(err, ErrRepairStdin) }

// firstZeroed: the card's error says its first transfer was zeroed.
func firstZeroed(err error) bool {
	var z *FirstZeroedError
	return errors.As(err, &z) && z.Zeroed()
}
