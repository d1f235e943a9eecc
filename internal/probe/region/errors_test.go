package region

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// failing is a card of 1 MiB whose every command fails.
type failing struct{}

func (failing) BlockSize() int    { return 512 }
func (failing) BlockCount() int64 { return 2048 }
func (failing) ReadBlocks(context.Context, int64, []byte) error {
	return errors.New("LBA 0: medium error")
}
func (failing) WriteBlocks(context.Context, int64, []byte) error {
	return errors.New("LBA 0: medium error")
}
func (failing) Sync(context.Context) error { return errors.New("no answer") }

// TestErrorTexts: every error of saving and putting back regions says its
// class and states facts only, as the calls that fail make them (the
// errors of reading a list are checked in TestLoadRefuses).
func TestErrorTexts(t *testing.T) {
	ctx := context.Background()
	r := Region{Offset: 4096, Length: 4096}
	_, tooLarge := Save(ctx, failing{}, "sim:c.img", Region{Length: MaxSave + 512})
	_, unread := Save(ctx, failing{}, "sim:c.img", r)
	s := &Saved{Region: r, Device: "sim:c.img", BlockSize: 512, data: make([]byte, r.Length)}
	list := &List{Card: Card{Target: "sim:c.img", Capacity: 2 << 20, BlockSize: 512}}
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"too large to save", tooLarge, failure.Usage},
		{"save failed", unread, failure.Unknown},
		{"restore failed", s.Restore(ctx, failing{}), failure.Unknown},
		{"another card", list.Restore(ctx, failing{}, "sim:other.img"), failure.Refused},
		{"not restored", &RestoreError{Region: r, Device: "sim:c.img", BlockSize: 512, Err: errors.New("write failed"), File: "/tmp/usbflash-bench-saved-1.img"}, failure.Device},
		{"not restored, nor kept", &RestoreError{Region: r, Device: "sim:c.img", BlockSize: 512, Err: errors.New("write failed"), FileErr: errors.New("no space left on device")}, failure.Device},
		{"restore aborted", &RestoreError{Region: r, Device: "sim:c.img", BlockSize: 512, Aborted: true, File: "/tmp/usbflash-bench-saved-1.img"}, failure.Interrupted},
		{"cancelled, restored", errCancelledRestored, failure.Interrupted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			if got := failure.Of(tc.err); got != tc.want {
				t.Errorf("class %v, want %v", got, tc.want)
			}
			factsonly.Check(t, tc.err.Error())
		})
	}
}
