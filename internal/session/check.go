package session

import (
	"cmp"
	"context"
	"fmt"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
)

// checkFake probes an opened, checked card for a fake capacity (write
// --check): a card whose usable size is smaller than the image (or any
// fake card, when the image's size is not known before writing) fails
// alone with a *fakecheck.FakeError; a fake card the image fits in is
// written, with a note that says so.
func (s *session) checkFake(ctx context.Context, c *card, src *image.Source) {
	name := c.d.Name
	s.emit(Note{Card: name, Message: fmt.Sprintf("Checking %s for a fake capacity (every block the check writes is put back)", name)})
	// The command that puts back what the probe could not names the card
	// as the user did, or as --watch found it.
	opts := *s.cfg.Targets.Check
	opts.Target = cmp.Or(c.spec, c.d.Name)
	res, err := fakecheck.Probe(ctx, c.d.Dev, opts)
	if err != nil {
		c.fail(err)
		return
	}
	need := src.Size
	switch {
	case !res.Fake():
		s.emit(Note{Card: name, Message: fmt.Sprintf("%s shows no fake capacity: %s (checked in %s)", name, res.Describe(), res.Elapsed.Round(1e6))})
	case !src.SizeExact:
		c.fail(&fakecheck.FakeError{Name: name, Result: res, Need: -1})
	case need > res.Usable:
		c.fail(&fakecheck.FakeError{Name: name, Result: res, Need: need})
	default:
		imageSize, _, _ := units.FormatBytesPair(need, res.Usable)
		s.emit(Note{Card: name, Message: fmt.Sprintf("Warning: %s is fake: %s; the image (%s) fits in what it holds, so it is written",
			name, res.Describe(), imageSize)})
	}
}
