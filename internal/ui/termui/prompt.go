package termui

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/ui/readerinfo"
)

// ErrNotConfirmed is an overwrite nobody could confirm: there was no
// terminal to ask at.
var ErrNotConfirmed = failure.New(failure.Refused, "not confirmed")

// IsTerminal says whether f (a stream) is a terminal: a person answers
// at it, or reads a progress bar drawn on it.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

// Prompt asks the person at a terminal.
type Prompt struct {
	In  io.Reader
	Out io.Writer
	// Interactive: In is a terminal a person answers at. Without one
	// nothing is asked and every question is refused, so a script never
	// overwrites a card it was not told to.
	Interactive bool
}

// ConfirmOverwrite asks whether to write what (in words) over cards, each
// shown by the line that identifies it; only y or yes agrees.
func (p Prompt) ConfirmOverwrite(cards []*drive.Device, what string) error {
	if !p.Interactive {
		return fmt.Errorf("%w: no terminal to ask whether to overwrite %s", ErrNotConfirmed, overwritten(cards))
	}
	q := Question(cards, what)
	var b strings.Builder
	for _, c := range q.Cards {
		fmt.Fprintf(&b, "Target: %s\n%s\n", c.Target, c.Identity)
	}
	fmt.Fprintf(p.Out, "%s%s [y/N] ", b.String(), q.Text)
	answer, _ := bufio.NewReader(p.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return NotConfirmed(cards)
}

// Overwrite is the question asked before cards are overwritten: each card
// by the line that identifies it, and the question itself. The terminal
// and the web page ask it in the same words.
type Overwrite struct {
	Cards []QuestionCard `json:"cards"`
	Text  string         `json:"text"`
}

// QuestionCard is one card of the question: its target and the line that
// lets a person recognise it.
type QuestionCard struct {
	Target   string `json:"target"`
	Identity string `json:"identity"`
}

// Question is the question whether to write what (in words) over cards.
func Question(cards []*drive.Device, what string) Overwrite {
	q := Overwrite{Text: fmt.Sprintf("Write %s to it? ALL DATA ON IT WILL BE LOST.", what)}
	if len(cards) > 1 {
		q.Text = fmt.Sprintf("Write %s to these %d cards? ALL DATA ON THEM WILL BE LOST.", what, len(cards))
	}
	for _, d := range cards {
		q.Cards = append(q.Cards, QuestionCard{Target: d.Name, Identity: readerinfo.IdentityLine(d)})
	}
	return q
}

// NotConfirmed is the refusal of an overwrite the person asked did not
// agree to.
func NotConfirmed(cards []*drive.Device) error {
	return failure.Errorf(failure.Refused, "not confirmed: nothing was written to %s", overwritten(cards))
}

// overwritten names the cards a question is about: the one, or how many.
func overwritten(cards []*drive.Device) string {
	if len(cards) == 1 {
		return cards[0].Name
	}
	return fmt.Sprintf("%d cards", len(cards))
}
