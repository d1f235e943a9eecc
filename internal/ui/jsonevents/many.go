package jsonevents

import "github.com/usbflash/usbflash/internal/session"

// The JSON events of a many-card write (several targets, --all, --watch),
// beside those of events.go: every event that concerns one card carries
// its target.

const (
	NameSlot         Name = "slot"          // --watch: a slot holds a card, or no longer
	NameCard         Name = "card"          // what became of one card
	NameCardProgress Name = "card_progress" // one card's bytes written, a few times a second
)

// ManyStart is the start event of a many-card write: "targets"
// instead of "target".
type ManyStart struct {
	Header
	Command      Command  `json:"command"`
	Image        string   `json:"image"`
	Format       string   `json:"format"`
	Size         int64    `json:"size"` // decoded bytes; -1 when unknown
	SizeExact    bool     `json:"size_exact"`
	Targets      []string `json:"targets"`
	TransferSize int64    `json:"transfer_size"`
	Buffers      int      `json:"buffers"`
	Lag          int      `json:"lag"`
}

type Card struct {
	Header
	Record
	// Hint is the advice for the card's error, "" for none.
	Hint string `json:"hint,omitempty"`
}

// NewCard is the card event of r, with the advice for its error (hint).
func NewCard(r session.Record, hint string) *Card { return &Card{Record: NewRecord(r), Hint: hint} }

// Slot is a slot of --watch's readers that now holds a card (Card) or
// is empty: a card inserted or taken out, a reader plugged in or
// unplugged. Target is the name its cards are written under.
type Slot struct {
	Header
	Target string `json:"target"`
	Card   bool   `json:"card"`
}

func (*Slot) Name() Name { return NameSlot }

type CardProgress struct {
	Header
	Phase  Phase  `json:"phase"`
	Target string `json:"target"`
	Done   int64  `json:"done"`  // image bytes written to this card
	Total  int64  `json:"total"` // image bytes; -1 when unknown
	Failed bool   `json:"failed"`
}

// ManySummary ends a many-card write or a --watch session, whatever
// became of the cards; the card events say which failed.
type ManySummary struct {
	Header
	Command   Command `json:"command"`
	Cards     int     `json:"cards"`
	Succeeded int     `json:"succeeded"`
	Failed    int     `json:"failed"`
	SHA256    string  `json:"sha256,omitempty"`
	Verify    string  `json:"verify,omitempty"` // how the cards verified were checked
	ElapsedS  float64 `json:"elapsed_s"`
}
