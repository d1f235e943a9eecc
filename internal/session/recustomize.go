package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/pipeline"
)

// A card already written (or an image file) is customised in place with
// the write's code (customize.Apply over a pipeline.Edit of the card) and
// the write's promise: it boots nothing until every change is on it. Its
// first transfer (the boot sector and partition table, as a write holds
// them back) is read and kept, every change is made in memory, and only
// then is anything written, in steps each synced before the next:
//
//  1. two region lists are kept in files (region.List, what a restore
//     reads): the bytes the card held where it changes, its first
//     transfer last (undo), and the bytes it is to hold (finish);
//  2. the first transfer is zeroed: the card boots nothing;
//  3. the boot partition's changes are written;
//  4. the first transfer is written back with the changes inside it.
//
// Then every range written is read back against the digests of what was
// meant, and the files go. However it stops, the card either holds what
// it held, boots nothing, or holds every change; a restore of one list
// finishes the customisation, of the other undoes it.

// CustomizeConfig is a customisation of cards already written, or of
// image files (file: targets), in place.
type CustomizeConfig struct {
	Customize customize.Config
	// TransferSize is the first transfer (held back as a write holds it)
	// and the read-back's READ size; 0: pipeline.DefaultTransferSize.
	TransferSize int
	Force        bool // take a disk the system uses (mounted, held)
	// Dir is where each card's region lists are kept while it is written;
	// "": the system's temporary directory.
	Dir      string
	Readers  *drive.Readers // nil: enumerated here
	Observer Observer
	// Confirm is asked for each card once it is open and checked and its
	// changes are decided, before the first byte is written: an error
	// leaves the card as it was. nil asks nothing.
	Confirm func(card *drive.Device) error
}

// CustomizedCard is a card customised, synced and read back the same.
type CustomizedCard struct {
	Card   string
	Result customize.Result
	Verify pipeline.VerifyResult
}

// CustomizeStep is how far a customisation in place got.
type CustomizeStep int

// The steps, in order.
const (
	StepZeroFirst CustomizeStep = iota + 1 // the first transfer being zeroed
	StepChanges                            // the boot partition's changes being written
	StepFirst                              // the first transfer being written back, last
	StepReadBack                           // every change on the card, read back
)

// state is what the card holds when a customisation stopped in step s.
func (s CustomizeStep) state(first int64) string {
	switch s {
	case StepZeroFirst:
		return fmt.Sprintf("while its first %d bytes were zeroed: they may be partly zeroed (it may boot nothing), nothing else was written", first)
	case StepChanges:
		return fmt.Sprintf("while its boot partition's changes were written: its first %d bytes are zeroed, so it boots nothing, and some of the changes may be on it", first)
	case StepFirst:
		return fmt.Sprintf("while its first %d bytes were written back, last: every other change is on it, and they may be partly zeroed (it may boot nothing)", first)
	}
	return "once every change was written and synced, while it was read back"
}

// CustomizeInterruptedError is a customisation in place that stopped
// after the card was first written to: it says in what state the card is
// and where the lists are that finish it or put it back as it was.
type CustomizeInterruptedError struct {
	Card, Target string // the name once open; as given, for a restore
	Step         CustomizeStep
	First        int64       // the first transfer's bytes
	Undo, Finish region.Kept // the card's bytes as they were; as customised
	Err          error
}

func (e *CustomizeInterruptedError) Error() string {
	return fmt.Sprintf("customising %s stopped %s: %v; its bytes as they were are kept in %s (listed in %s), as customised in %s (listed in %s)",
		e.Card, e.Step.state(e.First), e.Err, e.Undo.Data, e.Undo.Path, e.Finish.Data, e.Finish.Path)
}
func (e *CustomizeInterruptedError) Unwrap() error { return e.Err }

// Class is Interrupted when the user stopped it, else the cause's (a
// read-back that differs is Verify), else Device.
func (e *CustomizeInterruptedError) Class() failure.Class {
	if errors.Is(e.Err, context.Canceled) {
		return failure.Interrupted
	}
	return failure.Within(failure.Device, e.Err)
}

// ErrNoImageFile is a file: target that does not exist: there is nothing
// to customise.
var ErrNoImageFile = failure.New(failure.Usage, "there is no image file to customise")

// Customize customises each target in place, one after the other, each
// with its own values of the templates ({n}: its number, from 1): Opened,
// notes and the read-back's Progress are told to the Observer. With one
// target its error is Customize's; with several the others go on after
// one fails, and a *CardsError says how many did.
func Customize(ctx context.Context, cfg CustomizeConfig, specs []drive.Spec) ([]CustomizedCard, error) {
	if err := cfg.Customize.Check(); err != nil {
		return nil, err
	}
	if cfg.Readers == nil {
		cfg.Readers = &drive.Readers{}
	}
	if err := cfg.Readers.CheckAccess(ctx, specs); err != nil {
		return nil, err
	}
	s := newSession(Config{Engine: Engine{TransferSize: cfg.TransferSize}, Output: Output{Observer: cfg.Observer}})
	var (
		done []CustomizedCard
		errs []error
	)
	for i, spec := range specs {
		c, err := s.customizeInPlace(ctx, cfg, spec, i+1)
		if err != nil {
			if len(specs) == 1 {
				return nil, err
			}
			errs = append(errs, err)
			s.emit(Note{Card: spec.Raw, Message: err.Error()})
			continue
		}
		done = append(done, c)
	}
	if len(errs) > 0 {
		return done, &CardsError{Succeeded: len(done), Failed: len(errs), Errs: errs}
	}
	return done, nil
}

// customizeInPlace customises one card: everything read and decided before
// the first byte is written, then the steps above.
func (s *session) customizeInPlace(ctx context.Context, cfg CustomizeConfig, spec drive.Spec, n int) (CustomizedCard, error) {
	if spec.Scheme == drive.File {
		if _, err := os.Stat(spec.Path); errors.Is(err, fs.ErrNotExist) {
			return CustomizedCard{}, fmt.Errorf("%s: %w", spec.Raw, ErrNoImageFile)
		}
	}
	d, err := drive.Open(ctx, spec, drive.Options{Force: cfg.Force, Readers: cfg.Readers,
		OnNotice: s.onNotice})
	if err != nil {
		return CustomizedCard{}, err
	}
	defer d.Close()
	if err := drive.CheckWritable(d); err != nil {
		return CustomizedCard{}, err
	}
	transfer := s.fitCard(d, s.transfer)
	bs, capacity := int64(d.Dev.BlockSize()), d.Capacity()
	firstLen := min(int64(transfer), capacity) / bs * bs
	orig := aligned.Bytes(int(firstLen))
	if err := d.Dev.ReadBlocks(ctx, 0, orig); err != nil {
		return CustomizedCard{}, &pipeline.DeviceError{Device: d.Name, Op: pipeline.OpRead, LBA: 0, Count: firstLen / bs, BlockSize: int(bs), Err: err}
	}
	first := aligned.Bytes(int(firstLen))
	copy(first, orig)
	digests := &pipeline.Digests{BlockSize: int(bs), Size: capacity}
	e := pipeline.NewEdit(ctx, d.Dev, first, digests)
	custom, err := cfg.Customize.For(cardVars(n, d))
	if err != nil {
		return CustomizedCard{}, fmt.Errorf("customising %s (nothing was written): %w", d.Name, err)
	}
	res, err := customize.Apply(e, int(bs), custom, customize.Options{Card: n})
	if err != nil {
		return CustomizedCard{}, failure.Wrap(failure.Within(failure.Image, err), fmt.Errorf("customising %s (nothing was written): %w", d.Name, err))
	}
	if cfg.Confirm != nil {
		if err := cfg.Confirm(d); err != nil {
			return CustomizedCard{}, err
		}
	}
	final := make([]byte, firstLen)
	if _, err := e.ReadAt(final, 0); err != nil {
		return CustomizedCard{}, err
	}
	undo, finish, err := keepLists(cfg.Dir, region.Card{Target: spec.Raw, Capacity: capacity, BlockSize: int(bs)}, d.Name, e.Changes(), orig, final)
	if err != nil {
		return CustomizedCard{}, failure.Wrap(failure.Refused, fmt.Errorf("keeping %s's bytes before customising it (nothing was written): %w", d.Name, err))
	}
	interrupted := func(step CustomizeStep, err error) error {
		return &CustomizeInterruptedError{Card: d.Name, Target: spec.Raw, Step: step, First: firstLen, Undo: undo, Finish: finish, Err: err}
	}
	for _, st := range []struct {
		step  CustomizeStep
		write func() error
	}{
		{StepZeroFirst, func() error { return writeBlocks(ctx, d, 0, aligned.Bytes(int(firstLen))) }},
		{StepChanges, e.WriteChanges},
		{StepFirst, func() error { return writeBlocks(ctx, d, 0, first) }},
	} {
		err := st.write()
		if err == nil {
			err = syncCard(ctx, d)
		} else {
			// Whatever was written goes to the card before the state is
			// said, as a stopped write syncs.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			_ = d.Dev.Sync(sctx)
			cancel()
		}
		if err != nil {
			return CustomizedCard{}, interrupted(st.step, err)
		}
	}
	digests.List = append(digests.List, pipeline.TransferDigest{LBA: 0, Blocks: int32(firstLen / bs), Sum: pipeline.DigestOf(first)})
	slices.SortFunc(digests.List, func(a, b pipeline.TransferDigest) int { return cmp.Compare(a.LBA, b.LBA) })
	v, err := pipeline.VerifyDigests(ctx, d.Dev, *digests, pipeline.VerifyOptions{Name: d.Name, TransferSize: transfer,
		Progress: func(p pipeline.Progress) { s.emit(cardProgress(d.Name, p)) }})
	if err != nil {
		return CustomizedCard{}, interrupted(StepReadBack, err)
	}
	for _, k := range []region.Kept{undo, finish} {
		os.Remove(k.Data)
		os.Remove(k.Path)
	}
	s.emit(Note{Card: d.Name, Message: d.Name + " " + res.Describe() + "; read back the same"})
	return CustomizedCard{Card: d.Name, Result: res, Verify: v}, nil
}

// keepLists keeps the card's bytes where they change, as they are (undo)
// and as they are to be (finish), each list's first transfer last: a
// restore writes in the list's order.
func keepLists(dir string, card region.Card, name string, changes []pipeline.Change, orig, final []byte) (undo, finish region.Kept, err error) {
	bs := int64(card.BlockSize)
	u, f := &region.List{Card: card}, &region.List{Card: card}
	for _, c := range changes {
		r := region.Region{Offset: c.LBA * bs, Length: int64(len(c.New))}
		u.Saved = append(u.Saved, region.Held(r, name, card.BlockSize, c.Old))
		f.Saved = append(f.Saved, region.Held(r, name, card.BlockSize, c.New))
	}
	r := region.Region{Offset: 0, Length: int64(len(orig))}
	u.Saved = append(u.Saved, region.Held(r, name, card.BlockSize, orig))
	f.Saved = append(f.Saved, region.Held(r, name, card.BlockSize, final))
	if undo, err = u.Keep(dir, "usbflash-customize-undo-*"); err != nil {
		return undo, finish, err
	}
	if finish, err = f.Keep(dir, "usbflash-customize-finish-*"); err != nil {
		os.Remove(undo.Data)
		os.Remove(undo.Path)
	}
	return undo, finish, err
}

func writeBlocks(ctx context.Context, d *drive.Device, lba int64, p []byte) error {
	if err := d.Dev.WriteBlocks(ctx, lba, p); err != nil {
		bs := int64(d.Dev.BlockSize())
		return &pipeline.DeviceError{Device: d.Name, Op: pipeline.OpWrite, LBA: lba, Count: int64(len(p)) / bs, BlockSize: int(bs), Err: err}
	}
	return nil
}

func syncCard(ctx context.Context, d *drive.Device) error {
	if err := d.Dev.Sync(ctx); err != nil {
		return &pipeline.DeviceError{Device: d.Name, Op: pipeline.OpSync, LBA: -1, Err: err}
	}
	return nil
}
