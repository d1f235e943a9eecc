package blockdev_test

import (
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// limited is a 512-byte-block device that takes at most limit blocks per
// command (0: it does not say).
type limited struct {
	unnamed
	limit int64
}

func (d limited) BlockSize() int     { return 512 }
func (d limited) MaxTransfer() int64 { return d.limit }

func TestFitTransfer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dev     blockdev.Device
		want    int
		size    int
		capped  bool
		rounded bool
		note    string
	}{
		{"fits as asked", limited{limit: 2048}, 1 << 20, 1 << 20, false, false, ""},
		{"no limit known", limited{}, 4 << 20, 4 << 20, false, false, ""},
		{"no limiter at all", unnamed{}, 1 << 20, 1 << 20, false, false, ""},
		{"lowered to the device's limit", limited{limit: 240}, 1 << 20, 240 * 512, true, false,
			"sim:x takes at most 120 KiB per command: using that instead of 1 MiB"},
		{"rounded down to whole blocks", limited{}, 1000, 512, false, true,
			"transfer size rounded to 512 B, a whole number of 512-byte blocks"},
		{"at least one block", limited{}, 100, 512, false, true,
			"transfer size rounded to 512 B, a whole number of 512-byte blocks"},
		{"a limit is whole blocks: not rounded too", limited{limit: 3}, 4000, 1536, true, false,
			"sim:x takes at most 1.5 KiB per command: using that instead of 3.9 KiB"},
	} {
		f := blockdev.FitTransfer(tc.dev, tc.want)
		if f.Size != tc.size || f.Asked != tc.want || f.Capped() != tc.capped || f.Rounded() != tc.rounded {
			t.Errorf("%s: %+v (capped %v, rounded %v), want size %d, capped %v, rounded %v",
				tc.name, f, f.Capped(), f.Rounded(), tc.size, tc.capped, tc.rounded)
		}
		if got := f.Note("sim:x"); got != tc.note {
			t.Errorf("%s: note %q, want %q", tc.name, got, tc.note)
		}
	}
}
