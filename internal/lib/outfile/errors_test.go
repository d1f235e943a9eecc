package outfile

import (
	"errors"
	"io"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
)

// TestErrorTexts: a file that cannot be created before the work is the
// caller's (usage), one whose disk failed after it the device's, and every
// text states facts only.
func TestErrorTexts(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		err  error
		want failure.Class
	}{
		{"no such directory", Check(filepath.Join(dir, "missing", "plot.svg")), failure.Usage},
		// Found only once the work was done: the disk the file goes to.
		{"no such directory, at the end", Write(filepath.Join(dir, "missing", "report.json"), func(io.Writer) error { return nil }), failure.Device},
		{"disk full", &Error{Path: filepath.Join(dir, "b.img.xz"), Op: OpWrite, Err: syscall.ENOSPC}, failure.Device},
		{"removed while written", &Error{Path: filepath.Join(dir, "b.img.xz"), Op: OpWrite, Err: errors.New("removed before it was complete")}, failure.Device},
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
