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
	target := cards[0].Name
	if len(cards) > 1 {
		target = fmt.Sprintf("%d cards", len(cards))
	}
	if !p.Interactive {
		return fmt.Errorf("%w: no terminal to ask whether to overwrite %s", ErrNotConfirmed, target)
	}
	var b strings.Builder
	for _, d := range cards {
		fmt.Fprintf(&b, "Target: %s\n%s\n", d.Name, readerinfo.IdentityLine(d))
	}
	if len(cards) == 1 {
		fmt.Fprintf(p.Out, "%sWrite %s to it? ALL DATA ON IT WILL BE LOST. [y/N] ", b.String(), what)
	} else {
		fmt.Fprintf(p.Out, "%sWrite %s to these %d cards? ALL DATA ON THEM WILL BE LOST. [y/N] ", b.String(), what, len(cards))
	}
	answer, _ := bufio.NewReader(p.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return failure.Errorf(failure.Refused, "not confirmed: nothing was written to %s", target)
}
