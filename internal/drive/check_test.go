package drive

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms"
)

// TestCheckLastBlock: a reader that calls the last block it reports out of
// range is found when it is opened, and an image that needs that block is
// refused before its first byte, not failed at its end.
func TestCheckLastBlock(t *testing.T) {
	const card = 4 << 20
	for _, tc := range []struct {
		name    string
		opts    string
		image   int64
		refused bool
	}{
		{"capacity one block too big, the image needs the phantom block", "capacity-off-by-one=1", card + 512, true},
		{"capacity one block too big, the image stops before it", "capacity-off-by-one=1", card, false},
		{"capacity one block too big, FIX_CAPACITY given: the capacity is right", "capacity-off-by-one=1&vid=1234&pid=5678&quirks=c", card, false},
		{"a well-behaved reader, the whole card", "", card, false},
		{"fails the first READ(10)s after a card goes in: no capacity judged", "initial-read10=2", card, false},
		{"fails multi-block commands at the end", "last-sector-bug=8", card, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, spec := simCard(t, make([]byte, card), tc.opts)
			d, err := Open(context.Background(), spec, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			err = CheckWrite(d, tc.image, true)
			switch {
			case tc.refused && (failure.Of(err) != failure.Refused || !errors.Is(err, usbms.ErrCapacityOffByOne)):
				t.Errorf("CheckWrite = %v, want a refusal naming a capacity one block too many", err)
			case !tc.refused && err != nil:
				t.Errorf("CheckWrite = %v, want none", err)
			}
			if got, _ := os.ReadFile(path); string(got) != string(make([]byte, card)) {
				t.Error("the card changed")
			}
		})
	}
}

// simCard is a sim: target on the virtual clock whose card (LUN 0) holds
// content, with opts added to it.
func simCard(t *testing.T, content []byte, opts string) (string, Spec) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := Parse("sim:" + path + "?clock=virtual&" + opts)
	if err != nil {
		t.Fatal(err)
	}
	return path, spec
}
