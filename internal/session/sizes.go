package session

import (
	"cmp"
	"fmt"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// The settings a session's errors may be about (*failure.SettingError):
// the caller names them in its own words (the CLI, by its flags). Those
// of its image (its checksum, keyring, cache, catalog) are image's.
const (
	SettingTransferSize failure.Setting = "transfer size"
	SettingBuffers      failure.Setting = "buffers"
	SettingLag          failure.Setting = "lag"
	// SettingBlockMap is a map named together with no map; SettingSparse
	// a sparse write together with a map named.
	SettingBlockMap failure.Setting = "block map"
	SettingSparse   failure.Setting = "sparse"
	SettingSize     failure.Setting = "size"
	// SettingRepair is the repair of a card that reads back different
	// (Config.Repair, VerifyConfig.Repair).
	SettingRepair failure.Setting = "repair"
	// SettingEject is the eject of each card when done (Config.Eject),
	// which a target without a card ignores (drive.NotEjectableError).
	SettingEject failure.Setting = "eject"
)

// transferSize is the bytes per command a session's one setting asks
// (Config's, VerifyConfig's, BackupConfig's and CustomizeConfig's
// TransferSize; 0: none given): its default is chosen here, once, by what
// the session does with it, and each card then takes what it can
// (fitTransfer).
type transferSize int

// write is the bytes per WRITE: the size given, else
// pipeline.DefaultTransferSize.
func (t transferSize) write() int { return cmp.Or(int(t), pipeline.DefaultTransferSize) }

// read is the bytes per READ of a session that only reads a card (a
// verify, a backup): the size given, else pipeline.DefaultReadSize.
func (t transferSize) read() int { return cmp.Or(int(t), pipeline.DefaultReadSize) }

// readBack is the bytes per READ of the verify of cards cards a write
// wrote with written-byte commands: the size given (it may be what the
// user's reader needs), else pipeline.ReadBackSize's for them.
func (t transferSize) readBack(written, cards int) int {
	if t != 0 {
		return int(t)
	}
	return pipeline.ReadBackSize(written, cards)
}

// fitTransfer is a transfer size of want bytes fitted to a card
// (blockdev.FitTransfer): the one call of it in the sessions.
func fitTransfer(d *drive.Device, want int) blockdev.Fit { return blockdev.FitTransfer(d.Dev, want) }

// checkSizes refuses, before anything is opened, sizes no card can make
// work: a negative transfer size or lag, fewer than 2 buffers (0 is the
// engine's default), or buffers (with a download's read-ahead of ahead
// bytes) that would pass blockdev.MaxBufferMemory at the transfer size
// asked (a card that takes less only lowers it).
func checkSizes(transfer, buffers, lag, cards int, ahead int64) error {
	switch {
	case transfer < 0:
		return &failure.SettingError{Setting: SettingTransferSize, Err: fmt.Errorf("%d bytes is not a size", transfer)}
	case buffers != 0 && buffers < 2:
		return &failure.SettingError{Setting: SettingBuffers, Err: fmt.Errorf("%d is fewer than 2, the fewest with which filling overlaps the device", buffers)}
	case lag < 0:
		return &failure.SettingError{Setting: SettingLag, Err: fmt.Errorf("%d is less than 0 (lockstep)", lag)}
	}
	return checkMemory(transfer, buffersFor(transfer, buffers), lag, cards, ahead)
}

// buffersFor is the buffer count of transfers of transfer bytes: the one
// asked, else the engine's default for that size (pipeline.BuffersFor),
// so that a card that takes less than was asked gets the count its size
// calls for.
func buffersFor(transfer, asked int) int {
	if asked != 0 {
		return asked
	}
	return pipeline.BuffersFor(transfer)
}
