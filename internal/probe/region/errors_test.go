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
	noneBack := (&List{Card: Card{Target: "sim:c.img", Capacity: 1 << 20, BlockSize: 512}, Saved: []*Saved{s}}).Restore(ctx, failing{}, "sim:c.img")
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"too large to save", tooLarge, failure.Usage},
		{"save failed", unread, failure.Unknown},
		{"restore failed", s.Restore(ctx, failing{}), failure.Unknown},
		{"another card", list.Restore(ctx, failing{}, "sim:other.img"), failure.Refused},
		{"no region put back", noneBack, failure.Device},
		{"some regions not put back", &PartialError{Device: "sim:c.img", Regions: 9, Failed: []Unrestored{
			{Region: r, Err: errors.New("LBA 8: medium error")},
			{Region: Region{Offset: 1 << 20, Length: 512}, Past: true, Err: errors.New("LBA 2048: medium error")},
			{Region: Region{Offset: 2 << 20, Length: 512}, Written: true, Err: errors.New("LBA 4096 reads back different")},
			{Region: r, Err: errors.New("LBA 8: medium error")}, {Region: r, Err: errors.New("LBA 8: medium error")},
		}}, failure.Device},
		{"regions read back different", &PartialError{Device: "sim:c.img", Regions: 2, Failed: []Unrestored{
			{Region: r, Written: true, Err: errors.New("LBA 8 reads back different")}}}, failure.Verify},
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
