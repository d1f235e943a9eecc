package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
)

// A session's image is opened by image.Open, once, with every decision of
// how it is found and trusted (the catalog entry, the checksum, the
// signature, the cache, the entry's size); what it finds is said as it is
// found, and why the image cannot be trusted once it was announced
// (trust). The session checks the source against its sum before a card
// may boot it (image.Opened.Check).

// openImage opens the session's image, to be read as how says; before
// runs the session's own checks once the image is named and before any of
// it is read. s.cfg.Image becomes the image's path or URL (a catalog
// entry's).
func (s *session) openImage(ctx context.Context, how image.Reads, before func(*image.Opened) error) (*image.Opened, error) {
	img, err := image.Open(ctx, s.cfg.Image, image.OpenOptions{Reads: how, Note: s.note,
		BeforeRead: func(img *image.Opened) error {
			s.cfg.Image.Path = img.Path()
			if before == nil {
				return nil
			}
			return before(img)
		}})
	if err != nil {
		return nil, repairRefusal(err)
	}
	s.img = img
	return img, nil
}

// note is a session's note of its own.
func (s *session) note(msg string) { s.emit(Note{Message: msg}) }

// repairRefusal is image.Open's refusal of an image to be read again in
// a repair's words.
func repairRefusal(err error) error {
	var nk *image.NotKeptError
	switch {
	case errors.Is(err, image.ErrReadOnce):
		return &failure.SettingError{Setting: SettingRepair, Err: ErrRepairStdin}
	case errors.As(err, &nk):
		return &RepairNotKeptError{Image: nk.Image}
	}
	return err
}

// afterImage is what a session does once it ended with err: a cache entry
// an image error came from is hashed, and removed when it is damaged. It
// says whether such an entry is gone, so that a second pass reads the
// server.
func (s *session) afterImage(err error) (dropped bool) {
	if s.img == nil {
		return false
	}
	s.img.CheckAfter(err)
	return s.img.Dropped()
}

// trust says, once the image was announced, what finding its sum found,
// and returns why it cannot be trusted, if it cannot. A keyring that
// found no signed SHA-256 is content with a block map plan uses that
// vouches for every byte (writePlan.authenticates), as bmaptool's is.
func (s *session) trust(img *image.Opened, plan *writePlan) error {
	for _, n := range img.Found() {
		s.note(n)
	}
	err := img.Untrusted()
	if errors.As(err, new(*image.NoSignedSumError)) && plan.authenticates() {
		s.note("No checksum list gives " + img.Named() + " a signed SHA-256; block map " + plan.path +
			", signed, vouches for it: every range it maps is checked against its checksum as the image is read, and every other block must be zero")
		return nil
	}
	return err
}

// startCheck says what the image is checked against (Checksum, and a note
// as: "as it is written") and, for a file, starts hashing src, the
// session's first source.
func (s *session) startCheck(ctx context.Context, img *image.Opened, src *image.Source, as string) {
	from, signedBy := img.SumFrom()
	if from == "" {
		s.emit(Checksum{State: ChecksumNone})
		return
	}
	img.StartCheck(ctx, src, as)
	s.emit(Checksum{State: ChecksumChecking, From: from, SignedBy: signedBy})
}

// ErrRepairStdin: a repair decodes the image again, and standard input
// (or a pipe, a FIFO) is read once.
var ErrRepairStdin = failure.New(failure.Usage, "a repair decodes the image again from its start, and standard input or a pipe can be read only once")

// RepairNotKeptError is an image at a URL that a repair must decode again
// and that no cache could keep: refused before the card is read.
type RepairNotKeptError struct{ Image string }

func (e *RepairNotKeptError) Error() string {
	return fmt.Sprintf("%s could not be kept in the cache (said above), and a repair decodes the image again from its start: nothing was compared or written", e.Image)
}

// Class is Refused: nothing was written.
func (e *RepairNotKeptError) Class() failure.Class { return failure.Refused }
