package session

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
)

// DefaultLag is how many transfers a card of a many-card write may fall
// behind the others before it holds them back. Eight 1 MiB transfers
// absorb the jitter of equal readers (fanout's BenchmarkGroup: 8 cards
// take 1.00x the time of one with it, 1.10x in lockstep) for 8 MiB of
// memory per card.
const DefaultLag = 8

// Config is one write session's choices, in the parts they configure,
// each decided by the package that owns it: the image and how it is
// trusted (internal/image), how the cards are taken (drive, and fakecheck
// for the probe), the customisation (customize), how the engine writes and
// reads back (pipeline), and who is told and what is recorded (the
// caller's presenters).
type Config struct {
	// Image names the image and how it is found, read and trusted (its
	// checksum, keyring, cache, catalog entry): image.Open decides.
	Image image.Ref
	// Blocks, when set, is written instead of an image (Image is the zero
	// Ref): each card's own blocks, made once it is open (erase, format).
	Blocks  Blocks
	Targets Targets
	// Customize, when set, is written into every card's boot partition
	// after the image (customize.Apply), each card with its own values of
	// the templates ({n}: its number in the run, from 1).
	Customize *customize.Config
	Engine    Engine
	Output    Output
}

// Targets are how a session takes its cards, and what it does with each
// besides writing it.
type Targets struct {
	// Readers is the command's enumeration of readers; nil: Run
	// enumerates.
	Readers *drive.Readers
	// Force takes disks the system uses and writes images smaller than
	// one transfer.
	Force bool
	// SkipRefused: with several cards, write the others when some are
	// refused by a safety check; without it a refusal refuses them all.
	SkipRefused bool
	Eject       bool // eject each card when done
	// Check, when set, probes each card for a fake capacity after the
	// pre-write checks (check.go) with these options (its Target is each
	// card's); nil: no probe.
	Check *fakecheck.Options
}

// Engine is how the image is written and read back (pipeline's
// settings, and fanout's lag).
type Engine struct {
	// TransferSize is the bytes per WRITE, lowered to what every card
	// takes; 0: pipeline.DefaultTransferSize. A size given is the
	// verify's READ size too: it may be what the user's reader needs.
	TransferSize int
	// Buffers cycle between decoder and writer; 0: the engine's count for
	// the transfer size the cards take, chosen once they are open.
	Buffers int
	Lag     int  // several cards: transfers a card may fall behind
	Verify  bool // read every card back and compare
	// VerifyMethod is how: pipeline.MethodDigests (the zero value) or
	// pipeline.MethodSHA256.
	VerifyMethod pipeline.VerifyMethod
	// Repair: a card whose read-back differs has the ranges that differ
	// written again and compared again (pipeline.Repair), then is
	// verified in full once more; one that does not hold them fails as
	// without it. The image must be a file, decoded again.
	Repair   bool
	BlockMap BlockMapChoice
}

// Output is who is told what a session does, who is asked before it
// writes, and what it records of each card.
type Output struct {
	Observer Observer
	// Confirm is asked once every card is open and checked, before the
	// first byte; nil writes without asking (--yes).
	Confirm func(cards []*drive.Device, src *image.Source) error
	// Report, when set, records every card as it finishes (a .json or
	// .csv file: internal/ui/report); a Run keeps it with several cards'
	// path (one card with a report is written as one of several).
	Report ReportFile
	// ExitCodes is the exit code of each class of failure, for the
	// report's records (the caller's one table, as data); a class it
	// lacks records 1.
	ExitCodes map[failure.Class]int
	// Station and Operator label every card's record (a station's name,
	// who ran it); "" leaves them out.
	Station, Operator string
}

// Outcome is what became of one card.
type Outcome struct {
	Target   string // the name once open, else as given
	Serial   string // the reader's USB serial
	Capacity int64
	Err      error // nil: written (and verified, when asked)
	// The write: the stream's result (shared by every card of a run) and
	// this card's own bytes.
	Write    pipeline.WriteResult
	Written  int64
	Started  time.Time
	Finished time.Time
	// Slowest: of several cards, the one busy longest, which set the pace.
	Slowest bool
	// Verify is the read-back, nil when none was done.
	Verify *pipeline.VerifyResult
	// Repair is what a repair wrote again before the card matched; nil
	// when none was needed (or asked).
	Repair *pipeline.RepairResult
	// Identity is the card's slot and who it and its reader are, once
	// open.
	Identity Identity
	// Image, Station and Operator label the card's record: the image as
	// messages show it, and the session's Config.Station and Operator.
	Image, Station, Operator string
	// Ejected is nil without Eject; EjectErr says why an eject failed.
	Ejected  *bool
	EjectErr error
	// Skipped is what a block map or --sparse left out, and why.
	Skipped    int64
	SkippedWhy string
	// Customized is what the customisation wrote, nil without one.
	Customized *customize.Result
}

// Verified says the card was read back and matched.
func (o *Outcome) Verified() bool { return o.Err == nil && o.Verify != nil }

// Result is a whole session.
type Result struct {
	// Cards are the finished cards, in the order they finished; of a
	// session of Cards (a station's) the last RecentCards of them (its
	// report holds all).
	Cards   []*Outcome
	Tally   Tally // every finished card, counted
	Started time.Time
	// Report is the session's report: a Run's every record, that of a
	// session of Cards none (its Config.Output.Report keeps them as they
	// finish).
	Report *Report
}

// Tally is what a session's summary says of all its cards: a station's
// week of them costs no more than one.
type Tally struct {
	Cards, Succeeded int
	// Interrupted counts the cards a stop request stopped.
	Interrupted int
	// SHA256 is the image's as the first card that has it says ("" for
	// none), Verify how the first verified card was checked.
	SHA256, Verify string
}

// add counts a finished card, r being its record, and keeps it in Cards
// (only the last keep of them, if keep > 0).
func (res *Result) add(o *Outcome, r *Record, keep int) {
	t := &res.Tally
	t.Cards++
	switch {
	case o.Err == nil:
		t.Succeeded++
	case failure.Of(o.Err) == failure.Interrupted:
		t.Interrupted++
	}
	if t.SHA256 == "" {
		t.SHA256 = r.SHA256
	}
	if t.Verify == "" {
		t.Verify = r.Verify
	}
	if keep > 0 && len(res.Cards) == keep {
		copy(res.Cards, res.Cards[1:])
		res.Cards = res.Cards[:keep-1]
	}
	res.Cards = append(res.Cards, o)
}

// session is the state of one Run, Verify or session of Cards.
type session struct {
	cfg      Config
	transfer int        // the transfer size asked: Config's, or the default
	mu       sync.Mutex // serialises the observer and guards report
	report   *Report
	res      *Result
	// keep is how many finished cards res keeps (0: all, and every
	// record in report); TakeCards sets it.
	keep int
	// img is the session's image once it is open (openImage): what it is
	// checked against, the download's progress, how to read it again.
	img *image.Opened
	// inspected is what the image's customisation takes (customize.go's
	// inspectImage): each card is held to it when it is opened.
	inspected customize.Result
}

func newSession(cfg Config) *session {
	if cfg.Engine.Lag < 0 {
		cfg.Engine.Lag = 0
	}
	now := time.Now()
	return &session{cfg: cfg, transfer: transferSize(cfg.Engine.TransferSize).write(), report: &Report{Image: image.Shown(cfg.Image.Path), Started: now}, res: &Result{Started: now}}
}

func (s *session) emit(e Event) {
	if s.cfg.Output.Observer == nil {
		return
	}
	if n, ok := e.(Note); ok {
		// A note may quote a library's words, and a library may name
		// a URL (a list beside the image) with its secrets.
		n.Message = shown.URLsIn(n.Message)
		e = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Output.Observer.Observe(e)
}

// card is one target of a session and what became of it.
type card struct {
	d        *drive.Device
	spec     string // as given; "" for a card --watch found
	transfer int    // what this card takes
	n        int    // its number in the run, from 1 ({n} of a customisation)
	out      Outcome
	// digests are the card's own when a customisation changed what it
	// holds; nil: the write's.
	digests *pipeline.Digests
	// custom is the card's own customisation (its templates replaced),
	// decided when it was opened; nil without one.
	custom *customize.Config
}

func (c *card) fail(err error) {
	if c.out.Err == nil && err != nil {
		c.out.Err = err
		c.out.Finished = time.Now()
	}
}

func (c *card) failed() bool { return c.out.Err != nil }

// checkMemory refuses, before anything is opened, a session whose buffers
// would pass blockdev.MaxBufferMemory: the ring ((buffers + 2) x transfer),
// with several cards and a lag each card's window of lag transfers, and
// the download's read-ahead (ahead bytes; 0 for an image that is a file).
func checkMemory(transfer, buffers, lag, cards int, ahead int64) error {
	t, b, l, n := int64(transfer), int64(buffers), int64(max(lag, 0)), int64(cards)
	const limit = blockdev.MaxBufferMemory
	if n < 2 {
		l = 0
	}
	// One factor at a time, so no product can overflow.
	if t <= 0 || t > limit || b > limit || l > limit || n > limit || ahead < 0 || ahead > limit ||
		(b+2)*t > limit-ahead || (l > 0 && n*l > limit/t) || (b+2)*t+n*l*t > limit-ahead {
		return &MemoryError{TransferSize: t, Buffers: b, Lag: l, Cards: n, ReadAhead: ahead}
	}
	return nil
}

// MemoryError is a session whose buffers would take more than
// blockdev.MaxBufferMemory.
type MemoryError struct {
	TransferSize, Buffers, Lag, Cards int64
	ReadAhead                         int64 // the download's, in bytes
}

func (e *MemoryError) Error() string {
	what := fmt.Sprintf("transfers of %s with %d buffers need %d buffers of that size",
		units.FormatSize(e.TransferSize), e.Buffers, e.Buffers+2)
	if e.Lag > 0 {
		what += fmt.Sprintf(", and a lag of %d transfers with %d cards %d more", e.Lag, e.Cards, e.Lag*e.Cards)
	}
	if e.ReadAhead > 0 {
		what += fmt.Sprintf(", and %s of the image read ahead from the network", units.FormatSize(e.ReadAhead))
	}
	return fmt.Sprintf("%s: more than the %s the buffers may take", what, units.FormatSize(blockdev.MaxBufferMemory))
}

// Class is Usage: the sizes are the caller's.
func (e *MemoryError) Class() failure.Class { return failure.Usage }

// Run writes the image to every target: every card is opened and checked
// before any is written (in parallel, so a reader that does not answer
// holds no other back); one decode feeds them all; a card that fails drops
// out with its own error and the others go on; each is synced, verified
// and ejected on its own.
//
// With one target the card's error is Run's. With several, a refusal by a
// safety check refuses them all (*RefusedError) unless SkipRefused; a
// command-line mistake in any target is Run's error; otherwise Run returns
// nil when every card succeeded and a *CardsError when some did not.
func Run(ctx context.Context, cfg Config, specs []drive.Spec) (*Result, error) {
	if cfg.Targets.Readers == nil {
		cfg.Targets.Readers = &drive.Readers{}
	}
	res, err, again := run(ctx, cfg, specs)
	if again {
		// A damaged cache entry was removed before the first transfer
		// was written: the cards are written again from the server,
		// without asking again.
		cfg.Output.Confirm = nil
		res, err, _ = run(ctx, cfg, specs)
	}
	return res, err
}

// run is one pass of Run; again says a cache entry the image was read
// from did not match its SHA-256 and is gone, so that a second pass
// reads the server.
func run(ctx context.Context, cfg Config, specs []drive.Spec) (*Result, error, bool) {
	s := newSession(cfg)
	res, err := s.run(ctx, cfg, specs)
	dropped := s.afterImage(err)
	if dropped {
		s.note("Writing again from " + image.Shown(s.cfg.Image.Path) + ": the cache's copy was damaged and is removed")
	}
	return res, err, dropped
}

func (s *session) run(ctx context.Context, cfg Config, specs []drive.Spec) (*Result, error) {
	if cfg.Blocks != nil {
		return s.runBlocks(ctx, specs)
	}
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = t.Raw
	}
	img, plan, err := s.prepareImage(ctx, writeShape{cards: len(specs), lag: cfg.Engine.Lag, how: image.ReadOnce,
		many: len(specs) > 1 || cfg.Output.Report != nil, targets: names,
		// A reader this user may not open is said before anything is
		// read or downloaded, with what would give access.
		reach: func(ctx context.Context) error { return cfg.Targets.Readers.CheckAccess(ctx, specs) }})
	if err != nil {
		return s.res, err
	}
	defer img.Close()
	src := img.Source

	cards := s.openCards(ctx, specs, src, plan)
	defer func() {
		for _, c := range cards {
			if c.d != nil {
				c.d.Close()
			}
		}
	}()
	live, err := s.confirmCards(cards, src)
	if err != nil {
		return s.res, err
	}
	if len(live) > 0 {
		if err := s.writeCards(ctx, src, plan, live); err != nil {
			s.finish(cards, nil)
			return s.res, err
		}
	}
	return s.res, s.finish(cards, nil)
}

// confirmCards applies the session's policy to its opened and checked
// cards: a command-line mistake in any ends it; with several, a refusal
// refuses them all (recorded) unless SkipRefused; then the one question,
// about the cards that remain (src: what is written to them). It returns
// those cards.
func (s *session) confirmCards(cards []*card, src *image.Source) ([]*card, error) {
	var live []*card
	var refusals []error
	for _, c := range cards {
		switch {
		case failure.Of(c.out.Err) == failure.Usage:
			return nil, c.out.Err // a mistake on the command line: no card is meant
		case drive.IsRefusal(c.out.Err):
			refusals = append(refusals, c.out.Err)
		case c.out.Err == nil:
			live = append(live, c)
		}
	}
	if len(cards) > 1 && len(refusals) > 0 && !s.cfg.Targets.SkipRefused {
		s.finish(cards, nil)
		return nil, &RefusedError{Refused: refusals, Cards: len(cards)}
	}
	if len(live) > 0 && s.cfg.Output.Confirm != nil {
		devs := make([]*drive.Device, len(live))
		for i, c := range live {
			devs[i] = c.d
		}
		if err := s.cfg.Output.Confirm(devs, src); err != nil {
			return nil, err
		}
	}
	return live, nil
}

// openCards opens every target together and checks each card.
func (s *session) openCards(ctx context.Context, specs []drive.Spec, src *image.Source, plan *writePlan) []*card {
	newFile := max(expectedSize(src), 0)
	if plan.m != nil && newFile == 0 {
		newFile = plan.m.ImageSize
	}
	devs, errs := drive.OpenAll(ctx, specs, s.openOptions((newFile+511)/512*512))
	cards := make([]*card, len(specs))
	var wg sync.WaitGroup
	for i, t := range specs {
		c := &card{d: devs[i], spec: t.Raw, n: i + 1, out: Outcome{Target: t.Raw}}
		cards[i] = c
		if errs[i] != nil {
			c.fail(errs[i])
			continue
		}
		if s.cfg.Targets.Check == nil {
			s.checkCard(ctx, c, src)
			continue
		}
		// Each card's probe on its own goroutine: it takes seconds.
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.checkCard(ctx, c, src)
		}()
	}
	wg.Wait()
	return cards
}

func expectedSize(src *image.Source) int64 {
	if src.SizeExact {
		return src.Size
	}
	return -1
}

// RefusedError: with several cards, some were refused by a safety check,
// so none was written.
type RefusedError struct {
	Refused []error
	Cards   int
}

func (e *RefusedError) Error() string {
	var msgs []string
	seen := map[string]bool{}
	for _, err := range e.Refused {
		if m := err.Error(); !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 1 && len(e.Refused) == e.Cards {
		// The same refusal for every card (the image is too small): once.
		return fmt.Sprintf("none of the %d cards can be written: %s", e.Cards, msgs[0])
	}
	return fmt.Sprintf("%d of %d cards cannot be written, so none was:\n  %s", len(e.Refused), e.Cards, strings.Join(msgs, "\n  "))
}

// Class is Refused: nothing was written.
func (e *RefusedError) Class() failure.Class { return failure.Refused }

// Some says whether some cards could be written but for the refusals.
func (e *RefusedError) Some() bool { return len(e.Refused) < e.Cards }

// Unwrap gives the refusals, so their kinds can be told.
func (e *RefusedError) Unwrap() []error { return e.Refused }

// CardsError ends a session in which some cards failed.
type CardsError struct {
	Succeeded, Failed int
	Errs              []error // each failed card's error; of a station, the first of each class
}

func (e *CardsError) Error() string {
	if e.Succeeded == 0 {
		return "every card failed (see the table)"
	}
	return fmt.Sprintf("%d of %d cards were written, %d failed (see the table)", e.Succeeded, e.Succeeded+e.Failed, e.Failed)
}

// Unwrap gives the cards' errors.
func (e *CardsError) Unwrap() []error { return e.Errs }

// Partial says some cards were written (and verified) and some failed: an
// outcome of the session that no card's class says, and that a script
// tells apart from every card failing.
func (e *CardsError) Partial() bool { return e.Succeeded > 0 }

// Class is the exit policy of a session whose cards all failed: their
// class when they failed alike (every card refused, the image unreadable,
// a stop), Device when they failed differently, each card's own error
// being in the table. Of a partial session it says the same of the cards
// that failed.
func (e *CardsError) Class() failure.Class {
	if len(e.Errs) == 0 {
		return failure.Device
	}
	class := failure.Of(e.Errs[0])
	for _, err := range e.Errs[1:] {
		if failure.Of(err) != class {
			return failure.Device
		}
	}
	return class
}

// finish records every card (CardDone for each, the report saved) and
// applies the exit policy: with one card its error; with several nil when
// all succeeded, else a *CardsError. A stream error (the image, Ctrl-C)
// has been given to every card already.
func (s *session) finish(cards []*card, _ error) error {
	var errs []error
	ok := 0
	for _, c := range cards {
		if c.out.Finished.IsZero() {
			c.out.Finished = time.Now()
		}
		s.record(c)
		if c.failed() {
			errs = append(errs, c.out.Err)
		} else {
			ok++
		}
	}
	switch {
	case len(cards) == 1:
		return cards[0].out.Err
	case len(errs) == 0:
		return nil
	}
	return &CardsError{Succeeded: ok, Failed: len(errs), Errs: errs}
}

// record adds a finished card to the result and the report (saved at
// once: a station runs until stopped) and says what became of it.
func (s *session) record(c *card) {
	c.out.Image, c.out.Station, c.out.Operator = image.Shown(s.cfg.Image.Path), s.cfg.Output.Station, s.cfg.Output.Operator
	out := c.out
	rec := RecordOf(&out, s.cfg.Output.ExitCodes)
	s.mu.Lock()
	s.res.add(&out, &rec, s.keep)
	if s.report.SHA256 == "" && out.Write.Bytes > 0 && out.Write.SHA256 != ([32]byte{}) {
		s.report.SHA256 = fmt.Sprintf("%x", out.Write.SHA256)
	}
	if s.keep == 0 {
		// A station keeps no records: its report file holds them.
		s.report.Cards = append(s.report.Cards, rec)
	}
	var saveErr error
	if s.cfg.Output.Report != nil {
		saveErr = s.cfg.Output.Report.Add(s.report, rec)
	}
	s.res.Report = s.report
	s.mu.Unlock()
	s.emit(CardDone{Outcome: &out})
	if saveErr != nil {
		s.emit(Note{Message: saveErr.Error()})
	}
}

// RecordOf is the report's row for an outcome; codes is the exit code of
// each class, which gives the code its error alone would give (1 for a
// class it lacks).
func RecordOf(o *Outcome, codes map[failure.Class]int) Record {
	r := Record{Target: o.Target, Serial: o.Serial, Capacity: o.Capacity, Bytes: o.Written,
		Verified: o.Verified(), Started: o.Started, Finished: o.Finished}
	if !o.Started.IsZero() && o.Finished.After(o.Started) {
		r.Rate = float64(o.Written) / o.Finished.Sub(o.Started).Seconds()
	}
	if o.Write.SHA256 != ([32]byte{}) {
		r.SHA256 = fmt.Sprintf("%x", o.Write.SHA256)
	}
	if r.Verified {
		r.Verify = o.Verify.Method.Report()
	}
	if o.Customized != nil {
		r.Customized = &Customized{Format: string(o.Customized.Format), Files: o.Customized.Files}
	}
	stationFields(&r, o)
	switch {
	case o.Err != nil:
		r.Error = shown.URLsIn(o.Err.Error())
		r.Code = 1
		if c, ok := codes[failure.Of(o.Err)]; ok {
			r.Code = c
		}
	case o.Slowest:
		r.Bound = BoundSlowest
	case !o.Started.IsZero():
		r.Bound = BoundDevice
	}
	return r
}

// Record.Bound values: a card's own speed set its pace, or, of several
// cards, it was the slowest and set everyone's.
const (
	BoundDevice  = "device"
	BoundSlowest = "slowest"
)

// transportOf says how a card's reader is driven (its SCSI fact); the zero
// value for a file: target.
func transportOf(d *drive.Device) usbms.TransportInfo {
	if s, ok := d.Dev.(drive.SCSI); ok {
		return s.SCSI().Transport()
	}
	return usbms.TransportInfo{}
}

// readerSerial is the USB serial number of a card's reader (a sim:
// reader's too), "" for a file: target or a reader without one.
func readerSerial(d *drive.Device) string {
	if r, ok := d.Dev.(drive.ReaderSlot); ok {
		return r.ReaderID().Serial
	}
	return ""
}
