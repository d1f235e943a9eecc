package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/testkit/testimage"
)

// TestRefusedRunLeavesNoNewTarget: a target the session created (a file:
// or sim: card that did not exist) and then refused, or that the person
// did not confirm, is removed; one that existed stays.
func TestRefusedRunLeavesNoNewTarget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	imageRef, _ := testimage.File(t, dir, 1<<20)
	existing := filepath.Join(dir, "existing.img")
	if err := os.WriteFile(existing, make([]byte, 512<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	notConfirmed := errors.New("not confirmed")
	for _, tc := range []struct {
		name, target string
		class        failure.Class
		confirm      error // what Confirm answers
		stays        bool  // the target existed before
	}{
		{name: "file: too small for the image", target: "file:" + filepath.Join(dir, "small.img") + "?size=512KiB", class: failure.Refused},
		{name: "sim: too small for the image", target: "sim:" + filepath.Join(dir, "small-sim.img") + "?size=512KiB", class: failure.Refused},
		{name: "sim: write-protected", target: "sim:" + filepath.Join(dir, "wp.img") + "?size=2MiB&wp=1", class: failure.Refused},
		{name: "sim: slot not chosen", target: "sim:" + filepath.Join(dir, "two.img") + "?size=2MiB&luns=2", class: failure.Usage},
		{name: "sim: empty slot", target: "sim:" + filepath.Join(dir, "empty.img") + "?size=2MiB&nomedium=1", class: failure.Device},
		{name: "file: not confirmed", target: "file:" + filepath.Join(dir, "unconfirmed.img"), confirm: notConfirmed},
		{name: "file: existed, too small", target: "file:" + existing, class: failure.Refused, stays: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := drive.Parse(tc.target)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(context.Background(), Config{Image: image.Ref{Path: imageRef}, Engine: Engine{Verify: true}, Output: Output{Confirm: func([]*drive.Device, *image.Source) error { return tc.confirm }}}, []drive.Spec{spec})
			if tc.confirm != nil && !errors.Is(err, tc.confirm) || tc.confirm == nil && failure.Of(err) != tc.class {
				t.Errorf("Run = %v (class %v), want %v", err, failure.Of(err), tc.class)
			}
			path, _, _ := strings.Cut(strings.SplitN(tc.target, ":", 2)[1], "?")
			if _, err := os.Stat(path); (err == nil) != tc.stays {
				t.Errorf("%s exists: %v, want %v", path, err == nil, tc.stays)
			}
		})
	}
}
