package fakecheck

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/observe"
)

// SettingDestructive is a check that saves nothing it overwrites
// (Config.Destructive).
const SettingDestructive failure.Setting = "destructive"

// Config is one check of one card: open it, run the pre-write checks a
// probe needs (the medium takes writes), probe it, put back what it wrote.
type Config struct {
	Target drive.Spec
	// Readers is the command's enumeration of readers; nil: Run
	// enumerates.
	Readers *drive.Readers
	// Force checks a card whose disk the system uses.
	Force bool
	// MaxCache and Destructive are the probe's (Options).
	MaxCache    int64
	Destructive bool
	// Confirm is asked, for a destructive check, once the card is open
	// and before the first write; nil probes without asking.
	Confirm func(d *drive.Device) error
	// Abortable and SaveDir are the probe's (Options).
	Abortable func(abandon func() error) (done func())
	SaveDir   string
}

// Observer is told what a check does, in order (observe's, as every
// session's), from the goroutine that called Run and the reader's (its
// notes).
type Observer = observe.Observer

// ObserverFunc adapts a function to Observer.
type ObserverFunc = observe.Func

// Event is one of the types below.
type Event = observe.Event

// Note is the reader's notice (a recovery step, commands made smaller),
// as every session passes one on.
type Note = observe.Note

// Started says the card is open and checked and the probe begins.
type Started struct {
	Card        string // the name every later event and error uses
	Capacity    int64
	BlockSize   int
	MaxCache    int64 // 0: no cache to see through
	Destructive bool
}

// Stepped is how far the probe got, as every session's step progress: a
// step (a Step) as it starts, and the cache flush's bytes as they go.
type Stepped = observe.Progress

// PuttingBack says a cancelled probe is putting back the blocks it wrote
// before Run returns (a second interrupt stops that: Abortable).
type PuttingBack struct{ Card string }

// Finished is the verdict of a probe that ran to its end, before Run
// returns it (with a *FakeError for a fake card).
type Finished struct {
	Card   string
	Result *Result
}

func (Started) SessionEvent()     {}
func (PuttingBack) SessionEvent() {}
func (Finished) SessionEvent()    {}

// Run checks one card: it opens cfg.Target, refuses a write-protected
// medium, asks cfg.Confirm for a destructive probe, and probes. A fake
// card's result comes with a *FakeError; a cancelled check with an error
// wrapping ctx's, also when the cancel came while the blocks were put
// back.
func Run(ctx context.Context, cfg Config, obs Observer) (*Result, error) {
	emit := func(e Event) {
		if obs != nil {
			obs.Observe(e)
		}
	}
	d, err := drive.Open(ctx, cfg.Target, drive.Options{Force: cfg.Force, Readers: cfg.Readers,
		OnNotice: func(_ string, n observe.Notice) { emit(Note{Card: cfg.Target.Raw, Message: n.Text, Notice: &n}) }})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := drive.CheckWritable(d); err != nil {
		return nil, err
	}
	if cfg.Destructive && cfg.Confirm != nil {
		if err := cfg.Confirm(d); err != nil {
			return nil, err
		}
	}
	emit(Started{Card: d.Name, Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), MaxCache: max(cfg.MaxCache, 0), Destructive: cfg.Destructive})
	start := time.Now()
	opts := Options{MaxCache: cfg.MaxCache, Destructive: cfg.Destructive, Abortable: cfg.Abortable,
		Target: cfg.Target.Raw, SaveDir: cfg.SaveDir,
		Progress: func(p Progress) {
			if p.Step == StepRestore && ctx.Err() != nil {
				emit(PuttingBack{Card: d.Name})
			}
			emit(Stepped{Step: string(p.Step), Done: p.Done, Total: p.Total, Elapsed: time.Since(start)})
		}}
	res, err := Probe(ctx, d.Dev, opts)
	if err != nil {
		return res, stopped(ctx, err, cfg.Destructive)
	}
	emit(Finished{Card: d.Name, Result: res})
	if res.Fake() {
		return res, &FakeError{Name: d.Name, Result: res}
	}
	return res, nil
}

// stopped says what a failed or cancelled probe left on the card.
func stopped(ctx context.Context, err error, destructive bool) error {
	var re *RestoreError
	switch {
	case errors.As(err, &re):
		// Its class, whatever else went wrong: the card may not be as
		// it was.
		return failure.Wrap(re.Class(), err)
	case destructive:
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("check cancelled (every block it wrote was put back and read back the same): %w", ctx.Err())
	}
	return fmt.Errorf("%w (every block the check wrote was put back and read back the same)", err)
}
