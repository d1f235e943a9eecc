// Package slotlog keeps a station's per-slot logs: one file per place a
// card sits (a reader's port and LUN), in which every card written there
// leaves its notes (recovery steps, a repair) and its record, one JSON
// object per line. A slot that misbehaves week after week is then one file
// to read, whichever cards passed through it. A Logs is a session.Observer;
// the files are rotated by size, a few kept.
package slotlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 1 << 20 // a few thousand cards' records
	DefaultKeep     = 5
)

// Options are a Logs' settings.
type Options struct {
	Dir string // where the logs are; created (with its parents) when missing
	// MaxBytes is the size past which a slot's log is rotated: SLOT.log
	// becomes SLOT.log.1, the older ones move up, and past Keep they
	// go. 0: DefaultMaxBytes, Keep 0: DefaultKeep.
	MaxBytes int64
	Keep     int
	// ExitCodes gives the records' exit codes (session.RecordOf).
	ExitCodes map[failure.Class]int
}

// Logs writes the per-slot logs of one session.
type Logs struct {
	opts Options

	mu    sync.Mutex
	notes map[string][]line // by card name, until the card is done
	err   error             // the first write that failed
}

// line is one line of a log: a note about a card, or its record, in
// the JSON's shape (the record's is the card event's).
type line = jsonevents.SlotLine

// Open makes dir when it is missing (with its parents, as mkdir -p, mode
// 0750: the logs name cards and readers), checks it is a directory this
// process can write in, and returns the Logs writing there; a dir that
// cannot be made or written is refused before the first card.
func Open(opts Options) (*Logs, error) {
	dirErr := func(err error) error {
		return failure.Wrap(failure.Usage, fmt.Errorf("log directory %s: %w", opts.Dir, err))
	}
	if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
		return nil, dirErr(err)
	}
	if st, err := os.Stat(opts.Dir); err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, dirErr(err)
	}
	// A file made and removed: the first card's log would fail otherwise,
	// after its write.
	probe, err := os.CreateTemp(opts.Dir, ".usbflash-log-check-*")
	if err != nil {
		return nil, dirErr(err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	return &Logs{opts: opts, notes: map[string][]line{}}, nil
}

// Observe keeps a card's notes and writes them, with its record, to its
// slot's log when it is done.
func (l *Logs) Observe(e session.Event) {
	switch e := e.(type) {
	case session.Note:
		if e.Card == "" {
			return
		}
		l.mu.Lock()
		notes := append(l.notes[e.Card], line{Time: time.Now(), Card: e.Card, Note: e.Message})
		// A reader that keeps failing while no card finishes does not
		// grow a week's station: its latest notes are what tell.
		l.notes[e.Card] = notes[max(len(notes)-maxNotes, 0):]
		l.mu.Unlock()
	case session.CardDone:
		o := e.Outcome
		r := session.RecordOf(o, l.opts.ExitCodes)
		l.mu.Lock()
		defer l.mu.Unlock()
		// The reader's notes (a recovery step) name the reader, its
		// slot's the card: both are this card's.
		var lines []line
		for _, name := range []string{readerOf(o.Target), o.Target} {
			lines = append(lines, l.notes[name]...)
			delete(l.notes, name)
		}
		rec := jsonevents.NewRecord(r)
		lines = append(lines, line{Time: time.Now(), Card: o.Target, Record: &rec})
		slot := o.Identity.Slot
		if slot == "" {
			slot = o.Target
		}
		if err := l.write(FileName(slot), lines); err != nil && l.err == nil {
			l.err = err
		}
	}
}

// maxNotes is how many notes of one card (or reader) are kept until it
// is done.
const maxNotes = 100

// readerOf is the reader's name of a card of a multi-slot reader
// ("usb:0bda:0158/1" is of "usb:0bda:0158"); a card's own otherwise.
func readerOf(card string) string {
	if i := strings.LastIndexByte(card, '/'); i > 0 && strings.Trim(card[i+1:], "0123456789") == "" && i+1 < len(card) {
		return card[:i]
	}
	return card
}

// Close says whether every log line could be written.
func (l *Logs) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// FileName is the log file of a slot: its name with what a file name
// cannot hold (a path's separators, a sim: target's colon) replaced.
func FileName(slot string) string {
	r := strings.NewReplacer("/", "_", "\\", "_", ":", "_", "?", "_", "*", "_", "&", "_", "=", "_")
	return r.Replace(strings.TrimPrefix(slot, "/")) + ".log"
}

// write appends lines to the log name, rotating it first when they would
// take it past MaxBytes.
func (l *Logs) write(name string, lines []line) error {
	var b []byte
	for _, ln := range lines {
		j, err := json.Marshal(ln)
		if err != nil {
			return err
		}
		b = append(append(b, j...), '\n')
	}
	path := filepath.Join(l.opts.Dir, name)
	if st, err := os.Stat(path); err == nil && st.Size() > 0 && st.Size()+int64(len(b)) > l.opts.MaxBytes {
		if err := rotate(path, l.opts.Keep); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("slot log: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("slot log: %w", err)
	}
	return nil
}

// rotate moves path to path.1, path.1 to path.2 and so on, the one past
// keep removed.
func rotate(path string, keep int) error {
	if err := os.Remove(fmt.Sprintf("%s.%d", path, keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("slot log: %w", err)
	}
	for i := keep - 1; i >= 1; i-- {
		if err := os.Rename(fmt.Sprintf("%s.%d", path, i), fmt.Sprintf("%s.%d", path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("slot log: %w", err)
		}
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return fmt.Errorf("slot log: %w", err)
	}
	return nil
}

// Start opens the logs in dir for a command that asks for them: nil and a
// close that does nothing when dir is "".
func Start(dir string, codes map[failure.Class]int) (session.Observer, func() error, error) {
	if dir == "" {
		return nil, func() error { return nil }, nil
	}
	l, err := Open(Options{Dir: dir, ExitCodes: codes})
	if err != nil {
		return nil, nil, err
	}
	return l, l.Close, nil
}
