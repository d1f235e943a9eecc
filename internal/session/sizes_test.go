package session

import (
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/pipeline"
)

// TestCheckSizes: sizes no card can make work are refused before anything
// is opened, each naming its setting as data (or, for memory, the sizes),
// in words that state facts; 0 buffers is the engine's default, sized for
// the transfer.
func TestCheckSizes(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		transfer, buffers, lag, cards int
		ahead                         int64
		setting                       failure.Setting
		memory                        bool
	}{
		{"defaults", 1 << 20, 0, 0, 1, 0, "", false},
		{"defaults from a URL", 1 << 20, 0, 0, 1, httpsrc.ReadAheadMemory, "", false},
		{"large transfers, default buffers", 256 << 20, 0, 0, 1, 0, "", false},
		{"negative transfer", -512, 0, 0, 1, 0, SettingTransferSize, false},
		{"one buffer", 1 << 20, 1, 0, 1, 0, SettingBuffers, false},
		{"negative lag", 1 << 20, 0, -1, 2, 0, SettingLag, false},
		{"transfer past the bound", 1<<30 + 1<<20, 0, 0, 1, 0, "", true},
		{"buffers past the bound", 1 << 20, 100000, 0, 1, 0, "", true},
		{"lag past the bound", 64 << 20, 2, 8, 4, 0, "", true},
		// 1022 + 2 buffers of 1 MiB are the bound: a download's
		// read-ahead on top passes it.
		{"buffers at the bound from a file", 1 << 20, 1022, 0, 1, 0, "", false},
		{"buffers at the bound from a URL", 1 << 20, 1022, 0, 1, httpsrc.ReadAheadMemory, "", true},
		{"lag at the bound from a URL", 1 << 20, 2, 255, 4, httpsrc.ReadAheadMemory, "", true},
	} {
		err := checkSizes(tc.transfer, tc.buffers, tc.lag, tc.cards, tc.ahead)
		var me *MemoryError
		switch {
		case failure.SettingOf(err) != tc.setting, errors.As(err, &me) != tc.memory:
			t.Errorf("%s: %v", tc.name, err)
		case err != nil:
			factsonly.Check(t, err.Error())
		}
	}
}

// TestTransferSize: the one setting's default is chosen by what the
// session does (write, read, read back what it wrote), and a size given
// is used as it is, also for the read-back (the user's reader may need
// it); a negative one is left for checkSizes to refuse.
func TestTransferSize(t *testing.T) {
	for _, tc := range []struct {
		given                 transferSize
		write, read, readBack int
	}{
		{0, pipeline.DefaultTransferSize, pipeline.DefaultReadSize, pipeline.ReadBackSize(1<<20, 3)},
		{64 << 10, 64 << 10, 64 << 10, 64 << 10},
		{-512, -512, -512, -512},
	} {
		if w, r, b := tc.given.write(), tc.given.read(), tc.given.readBack(1<<20, 3); w != tc.write || r != tc.read || b != tc.readBack {
			t.Errorf("transferSize(%d): write %d, read %d, read back %d; want %d, %d, %d", tc.given, w, r, b, tc.write, tc.read, tc.readBack)
		}
	}
}
