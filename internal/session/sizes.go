package session

import (
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/pipeline"
)

// The settings a session's errors may be about (*failure.SettingError):
// the caller names them in its own words (the CLI, by its flags).
const (
	SettingTransferSize failure.Setting = "transfer size"
	SettingBuffers      failure.Setting = "buffers"
	SettingLag          failure.Setting = "lag"
	SettingSHA256       failure.Setting = "sha256"
	SettingKeyring      failure.Setting = "sha256 keyring"
	SettingFingerprint  failure.Setting = "sha256 fingerprint"
	// SettingKeyringNoSHA256 is a keyring named together with no checksum
	// looked for; SettingKeyringSHA256 together with a sum given.
	SettingKeyringNoSHA256 failure.Setting = "sha256 keyring and no sha256"
	SettingKeyringSHA256   failure.Setting = "sha256 keyring and sha256"
	// SettingCache is the directory of images read from URLs.
	SettingCache failure.Setting = "cache"
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
