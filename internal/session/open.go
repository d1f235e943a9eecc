package session

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
)

// Every command that reads an image (write with one card or several, a
// station, verify, verify --repair) opens it here, with every decision of
// how it is trusted made once, the same for all: the checksum settings
// against each other, the sum it is checked against (given, its catalog
// entry's, or a list beside it, signed by the keyring's keys when one is
// given: a keyring with no signed sum refuses the image), the cache, and
// the catalog entry's size. What it returns is the opened source and its
// checksum state; the session then checks the source against that state
// before a card may boot it (checkDownload).

// trusted is an image opened for a session and what it is to be trusted
// by.
type trusted struct {
	src *image.Source
	// sum is what the image is checked against before a card may boot it
	// (or a verify says it matches); nil: nothing.
	sum *download
	// notes say what finding the sum found (lists passed over, the
	// signature checked), and err why it cannot be trusted: both are said
	// once the image was announced (Started), before any card is written.
	notes []string
	err   error
	// cleanup removes a temporary download, if one was made.
	cleanup func()
}

// close closes the image and removes what was downloaded for it alone.
func (t *trusted) close() {
	t.src.Close()
	t.cleanup()
}

// reads says how often a session reads its image.
type reads int

const (
	// readOnce: one decode feeds every card (a write, a verify).
	readOnce reads = iota
	// readPerCard: each card of a station decodes it again; an image at a
	// URL is read once, into the cache, when the cache can hold it, and
	// streams to each card otherwise.
	readPerCard
	// readAgain: a repair decodes it again from its start: an image at a
	// URL must be kept, in the cache, as a file.
	readAgain
)

// openTrusted opens the image the session's Config names (a path, "-",
// an http(s) URL, or the URL of the catalog entry resolveCatalog chose)
// with its checksum, signature, cache and size decisions. An image read
// more than once (how) at a URL is first read whole into the cache (a
// temporary one when Config names none) and then read from there as a
// file (s.pinned), unless its sum cannot be trusted.
func (s *session) openTrusted(ctx context.Context, how reads) (*trusted, error) {
	if err := checkChecksum(s.cfg); err != nil {
		return nil, err
	}
	if how == readAgain && s.cfg.Image == "-" {
		return nil, &failure.SettingError{Setting: SettingRepair, Err: ErrRepairStdin}
	}
	t := &trusted{cleanup: func() {}}
	if how != readOnce {
		t.cleanup = s.stationCache()
	}
	// The checksum is found before the image is opened (a stream is
	// hashed from its first byte) and its trouble said after.
	t.sum, t.notes, t.err = findDownload(s.cfg, s.readBeside(ctx), s.entry)
	if how != readOnce && t.err == nil {
		err := s.prefetch(ctx, t.sum)
		if err == nil && how == readAgain && isURL(s.cfg.Image) && s.reopener() == nil {
			err = &RepairNotKeptError{Image: displayImage(s.cfg.Image)}
		}
		if err != nil {
			t.cleanup()
			return nil, err
		}
	}
	src, err := s.openImage(ctx, t.sum)
	if err != nil {
		t.cleanup()
		return nil, err
	}
	t.sum = s.checkEntry(t.sum) // a cache entry read is checked as any file
	if how == readAgain && t.err == nil && src.Stream() {
		// A pipe or a FIFO named by its path: read once, as standard
		// input is. (An image not trusted is refused for that, said
		// once it is announced.)
		src.Close()
		t.cleanup()
		return nil, &failure.SettingError{Setting: SettingRepair, Err: ErrRepairStdin}
	}
	s.stream = src.Stream()
	t.src = src
	return t, nil
}

// trust says, once the image was announced, what finding its sum found,
// and returns why it cannot be trusted, if it cannot. A keyring that
// found no signed SHA-256 is content with a block map plan uses that
// vouches for every byte (writePlan.authenticates), as bmaptool's is.
func (s *session) trust(t *trusted, plan *writePlan) error {
	for _, n := range t.notes {
		s.emit(Note{Message: n})
	}
	if errors.As(t.err, new(*image.NoSignedSumError)) && plan.authenticates() {
		s.emit(Note{Message: "No checksum list gives " + imageName(s.cfg.Image) + " a signed SHA-256; block map " + plan.path +
			", signed, vouches for it: every range it maps is checked against its checksum as the image is read, and every other block must be zero"})
		return nil
	}
	return t.err
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

// reopener opens the image again from its start, for a read-back that
// locates a difference or for a repair; nil for an image read once
// (standard input, a pipe or FIFO, a URL not kept in the cache).
func (s *session) reopener() func() (io.ReadCloser, error) {
	s.cacheMu.Lock()
	pinned := s.pinned
	s.cacheMu.Unlock()
	path := s.cfg.Image
	switch {
	case pinned != "":
		path = pinned
	case path == "-" || isURL(path) || s.stream:
		return nil
	}
	return func() (io.ReadCloser, error) {
		src, err := image.Open(path)
		if err != nil {
			return nil, err
		}
		return src, nil
	}
}
