package termui

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
)

// blankDevice is a device of blocks nobody reads: the prompt only says
// its size.
type blankDevice struct{ blocks int64 }

func (d blankDevice) BlockSize() int                                   { return 512 }
func (d blankDevice) BlockCount() int64                                { return d.blocks }
func (d blankDevice) ReadBlocks(context.Context, int64, []byte) error  { return nil }
func (d blankDevice) WriteBlocks(context.Context, int64, []byte) error { return nil }
func (d blankDevice) Sync(context.Context) error                       { return nil }

// TestConfirmOverwrite: only y or yes at a terminal agrees; anything else
// is a refusal, and without a terminal nothing is asked and the refusal is
// ErrNotConfirmed (the one --yes answers).
func TestConfirmOverwrite(t *testing.T) {
	one := []*drive.Device{{Name: "file:a.img", Dev: blankDevice{8192}}}
	two := append(one, &drive.Device{Name: "file:b.img", Dev: blankDevice{8192}})
	for _, tt := range []struct {
		name        string
		cards       []*drive.Device
		interactive bool
		answer      string
		ok          bool
		asked       string // in what the prompt printed; "" for nothing printed
	}{
		{"y", one, true, "y\n", true, "Target: file:a.img\n  4.19 MB\nWrite IMG to it? ALL DATA ON IT WILL BE LOST. [y/N] "},
		{"YES, spaced", one, true, "  YES \n", true, "Write IMG to it?"},
		{"n", one, true, "n\n", false, "Write IMG to it?"},
		{"nothing typed", two, true, "", false, "Target: file:b.img\n  4.19 MB\nWrite IMG to these 2 cards? ALL DATA ON THEM WILL BE LOST. [y/N] "},
		{"no terminal", one, false, "y\n", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Prompt{In: strings.NewReader(tt.answer), Out: &out, Interactive: tt.interactive}.ConfirmOverwrite(tt.cards, "IMG")
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want agreement %v", err, tt.ok)
			}
			if err != nil && failure.Of(err) != failure.Refused {
				t.Errorf("%v: class %v, want refused", err, failure.Of(err))
			}
			if got := errors.Is(err, ErrNotConfirmed); got != !tt.interactive {
				t.Errorf("%v: ErrNotConfirmed %v, want it only without a terminal", err, got)
			}
			if (tt.asked == "") != (out.Len() == 0) || !strings.Contains(out.String(), tt.asked) {
				t.Errorf("printed %q, want %q", out.String(), tt.asked)
			}
		})
	}
}
