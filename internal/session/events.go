// Package session is a write session: one image onto 1..N cards, each card
// going through check -> write -> sync -> verify -> eject -> outcome, the
// whole told to an Observer as typed events. One card is N = 1 of the same
// code; a station (internal/station) hands a session its cards as they are
// inserted (Cards). The session's exit policy (every card, some, none),
// the pre-write checks of every write (preflight.go), and the other
// sessions over a card (Verify with its repair, NewBackup, Customize in
// place) live here too; the image is opened by internal/image's Open.
package session

import (
	"time"

	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
)

// Observer is told everything a session does, in order (observe's, as
// every session's). Observe is called from several goroutines (recovery
// notes come from the reader's, progress from the engine's), never at
// once: the session serialises the calls.
type Observer = observe.Observer

// ObserverFunc adapts a function to Observer.
type ObserverFunc = observe.Func

// Event is one of the types below.
type Event = observe.Event

// Started comes before the first command to any target: a reader that
// does not answer must not leave the user looking at nothing.
type Started struct {
	Image        string
	Source       *image.Source
	Targets      []string // as given (--watch: none)
	TransferSize int      // as asked; Opened says what each card uses
	Buffers      int
	Lag          int
	Watch        bool
}

// Opened says a card is open, under the name every later event uses.
type Opened struct {
	Card         string
	Capacity     int64
	BlockSize    int
	TransferSize int // what the card takes, after its limits
	// Transport is how the card's reader is driven (BOT or UAS); the
	// zero value for a file.
	Transport usbms.TransportInfo
}

// Note is something worth knowing that changes nothing: a recovery step,
// a transfer size lowered, a sparse write. Card is "" for the session.
type Note = observe.Note

// BlockMapChosen says the write uses a block map: only what it maps is
// written and verified.
type BlockMapChosen struct {
	Path        string
	Ranges      int
	MappedBytes int64
	ImageSize   int64
}

// WriteStarted comes once every card was opened, checked and confirmed,
// naming the cards being written and the transfer size they share.
type WriteStarted struct {
	Cards        []string
	TransferSize int
}

// CardProgress is how far one card got.
type CardProgress struct {
	Card   string
	Phase  pipeline.Phase
	Done   int64 // image bytes written or verified
	Total  int64 // -1 when unknown
	Failed bool
}

// Progress says how far the session got, a few times a second through
// every phase: the stream's image bytes (for a compressed image also the
// file's bytes read) and every card's own.
type Progress struct {
	Phase           pipeline.Phase
	Done, Total     int64 // image bytes; Total -1 when unknown
	CompressedDone  int64 // -1: not a compressed image being written
	CompressedTotal int64 // -1 when unknown
	Elapsed         time.Duration
	Cards           []CardProgress
	// Download is the image's download beside the write, for an image
	// read from a URL while it is written; nil otherwise.
	Download *Download
}

// Download is how far an image's download got while it is written:
// Bytes received of Total (-1 when neither the server nor the catalog
// says), its Rate in bytes per second since it was asked for, the Resumes
// after failures, and which side bounds the run: BoundDownload when the
// reader waited for the network most of the time, else BoundWrite (the
// decoding and the cards keep up with nothing faster).
type Download struct {
	URL          string
	Bytes, Total int64
	Elapsed      time.Duration
	Rate         float64
	Resumes      int
	Bound        string
}

// Sides in Download.Bound.
const (
	BoundDownload = "download"
	BoundWrite    = "write"
)

// Slot says a slot of a station's readers (internal/station) holds a
// card, or not, when that changed: a card inserted or taken out, a reader
// plugged in or unplugged. Card is the name the slot's cards are written
// under.
type Slot struct {
	Card    string
	Present bool
}

// Checksum says what the image is checked against before its first
// transfer is written: nothing (ChecksumNone: no sum given, none beside
// the image), a sum it is checked against as it is written
// (ChecksumChecking), and then that it matched (ChecksumMatched, as the
// cards Card names are written). From names the sum (a list beside the
// image, a catalog's entry, the one given); SignedBy is the key whose good
// signature the list carries, "" when none was checked.
type Checksum struct {
	Card     string
	State    string
	From     string
	SignedBy string
}

// States of Checksum.
const (
	ChecksumNone     = "none"
	ChecksumChecking = "checking"
	ChecksumMatched  = "matched"
)

// Readers says how many readers a station (internal/station) holds open,
// when the number changes.
type Readers struct {
	Present int
}

// CardDone says what became of one card.
type CardDone struct {
	Outcome *Outcome
}

// BackupStarted comes before the first command to the card a backup
// reads.
type BackupStarted struct {
	Target       string // as given
	Out          string
	Format       string // the output file's (imagedst's names)
	TransferSize int    // as asked; Opened says what the card takes
	Buffers      int    // for the transfer size asked
}

// InUse says the system uses the disk of a card that is only read: what
// is read may change meanwhile. Err says how it is used.
type InUse struct {
	Card string
	Err  error
}

// ExtentChosen says how much of the card a backup reads, and why.
type ExtentChosen struct {
	Card   string
	Extent imagedst.Extent
}

func (BackupStarted) SessionEvent()  {}
func (InUse) SessionEvent()          {}
func (ExtentChosen) SessionEvent()   {}
func (Started) SessionEvent()        {}
func (Opened) SessionEvent()         {}
func (BlockMapChosen) SessionEvent() {}
func (WriteStarted) SessionEvent()   {}
func (Progress) SessionEvent()       {}
func (CardDone) SessionEvent()       {}
func (Readers) SessionEvent()        {}
func (Checksum) SessionEvent()       {}
func (Slot) SessionEvent()           {}
