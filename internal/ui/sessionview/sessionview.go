// Package sessionview is what the commands that write, compare, back up,
// customise or probe a card show of their sessions (session's write,
// verify, backup and customisation; fakecheck's check and put-back): the
// JSON events (docs/events.md) and the lines a person reads, through a
// termui.Reporter. The words that belong to the command line (the flag
// that gives a setting, the advice of a reader's notice, the exit code of
// each class of failure) are the caller's, in Words.
package sessionview

import (
	"strings"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// Words are the command line's words that the presenters say and the
// command owns: its one table of flags, its advice, its exit codes.
type Words struct {
	// Flag is the command line's name of a setting ("" for none).
	Flag func(failure.Setting) string
	// NoticeAdvice is the advice a reader's notice carries ("" for none).
	NoticeAdvice func(*observe.Notice) string
	// InUseAdvice is what frees a disk the system uses in these ways.
	InUseAdvice func([]drive.Use) string
	// Codes is the exit code of each class of failure, for a card's
	// record.
	Codes map[failure.Class]int
	// Hint is the advice for an error ("" for none), for a card's.
	Hint func(error) string
}

// hint is the advice for err, "" for none (or no error).
func (w Words) hint(err error) string {
	if err == nil {
		return ""
	}
	return w.Hint(err)
}

// Note is a reader's notice (or a note of no notice, n nil) as a note
// event and its text: a setting it speaks of named by its flag, and its
// advice (Words.NoticeAdvice) as the event's hint and the text's next
// line.
func (w Words) Note(msg string, n *observe.Notice) (jsonevents.Event, string) {
	if n != nil && n.Kind == observe.NoticeSetting && w.Flag(n.Setting) != "" {
		// The setting in the words of the command line: its flag.
		msg = strings.Replace(msg, string(n.Setting)+" ", w.Flag(n.Setting)+" ", 1)
	}
	ev := jsonevents.NewNote(msg)
	ev.Hint = w.NoticeAdvice(n)
	if ev.Hint == "" {
		return ev, msg
	}
	return ev, msg + "\n" + termui.Sentence(ev.Hint)
}

// Notices passes a reader's notices (recovery steps, commands made
// smaller) to rep, each with its advice.
func (w Words) Notices(rep termui.Reporter) func(reader string, n observe.Notice) {
	return func(_ string, n observe.Notice) { rep.Event(w.Note(n.Text, &n)) }
}

// Card shows the events every session of one card has (write, verify,
// read, customize): the card opened, notes, the block map chosen,
// progress.
func Card(rep termui.Reporter, w Words, e session.Event) {
	switch e := e.(type) {
	case session.BlockMapChosen:
		blockMap(rep, e)
	case session.Opened:
		rep.Event(deviceEvent(e), "")
	case session.Note:
		rep.Event(w.Note(e.Message, e.Notice))
	case session.Progress:
		rep.Progress(progressOf(e))
	case session.Checksum:
		rep.Event(&jsonevents.Checksum{State: e.State, From: e.From, SignedBy: e.SignedBy, Target: e.Card}, "")
	}
}

// noChecksumNote says when a compressed image carries no checksum of its
// own (zstd without content checksums, xz with check "none"): damage in
// it is found only where the decoder trips, if at all, so the download's
// checksum and the verify are all there is.
func noChecksumNote(rep termui.Reporter, w Words, src *image.Source) {
	if src.Format == image.FormatRaw || src.HasChecksum {
		return
	}
	msg := "This " + src.Format.String() + " image carries no checksum of its own: only the read-back and the publisher's SHA-256 (" +
		w.Flag(image.SettingSHA256) + ") can tell it is intact"
	rep.Event(jsonevents.NewNote(msg), msg)
}

func ptr[T any](v T) *T { return &v }
