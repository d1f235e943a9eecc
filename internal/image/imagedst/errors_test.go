package imagedst

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/pipeline"
)

// TestErrorTexts: every error a backup gives says its class and states
// facts only: made by the calls that refuse (an existing file, a size the
// card lacks, a table that cannot be read) or as the backup builds them.
func TestErrorTexts(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.img.xz")
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	small := &card{data: osLike(1 << 20)}
	_, overSize := ExtentOf(ctx, small, "sim:card.img", 2<<20, false)
	_, unreadable := ExtentOf(ctx, &card{data: osLike(1 << 20), failOn: 1, failAt: 0}, "sim:card.img", 0, true)
	_, created := Create(existing, false)
	part := filepath.Join(dir, "b.img.xz.part")
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"backup over a file", CheckBackup(existing, false), failure.Refused},
		{"create over a file", created, failure.Refused},
		{"no such directory", CheckBackup(filepath.Join(dir, "missing", "b.img"), true), failure.Usage},
		{"more than the card holds", overSize, failure.Refused},
		{"the partition table unreadable", unreadable, failure.Device},
		{"second read differs", &VerifyError{Out: "b.img.xz", Part: part,
			Err: &pipeline.VerifyError{Device: "sim:card.img", HashOnly: true, Size: 1 << 20}}, failure.Verify},
		{"second read interrupted", &VerifyError{Out: "b.img.xz", Part: part, Err: context.Canceled}, failure.Interrupted},
		{"second read failed", &VerifyError{Out: "b.img.xz", Part: part, Err: errors.New("LBA 8: medium error")}, failure.Verify},
		{"block map not written", &BlockMapError{Out: "b.img.xz", Err: &outfile.Error{Path: "b.img.xz.bmap", Op: outfile.OpWrite, Err: errors.New("no space left on device")}}, failure.Device},
		{"block map not made", &BlockMapError{Out: "b.img.xz", Err: errors.New("range 1-2 has no SHA-256")}, failure.Device},
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
