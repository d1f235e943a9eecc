package session

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
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

// Config is one session's choices.
type Config struct {
	Image string // a path, an http(s) URL, or "-" for standard input
	// Stdin is what Image "-" reads; nil: the process's standard input.
	Stdin *os.File
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
	// Station and Operator label every card's record (a station's name,
	// who ran it); "" leaves them out.
	Station, Operator string
	// StopTimeout, for Watch: when ctx ends (a stop request: SIGTERM to
	// a service) no new card is taken and the cards being written are
	// finished, for up to this long, before they are stopped after the
	// command in flight; 0 stops them at once.
	StopTimeout time.Duration
	// SaysStop, if set, is called by Watch with a StopTimeout, which says
	// itself (a Note) what a stop request does: whatever announces stop
	// requests (the process's signal handler) must not say "stopped after
	// the command in flight" then. Watch calls what it returns as it
	// returns.
	SaysStop func() (remove func())
	// Repair: a card whose read-back differs has the ranges that differ
	// written again and compared again (pipeline.Repair), then is
	// verified in full once more; one that does not hold them fails as
	// without it. The image must be a file, decoded again.
	Repair bool
	Eject  bool // eject each card when done
	// Force takes disks the system uses and writes images smaller than
	// one transfer.
	Force bool
	// SkipRefused: with several cards, write the others when some are
	// refused by a safety check; without it a refusal refuses them all.
	SkipRefused bool
	BlockMap    BlockMapChoice
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
	Observer  Observer
	// SHA256 is the image file's SHA-256 as its publisher gives it (hex):
	// checked as the image streams, before the first transfer is written.
	// "" looks for it beside the image (IMAGE.sha256, SHA256SUMS, ...)
	// unless NoSHA256.
	SHA256   string
	NoSHA256 bool
	// SHA256Keyring is a file of the publisher's OpenPGP public keys
	// (gpg --export, armoured or binary): a checksum list found beside
	// the image must then carry a good signature by one of them, clear-
	// signed or detached (LIST.gpg, .sig, .asc, .sign). With NoSHA256 or
	// a SHA256 given there is no list for it to check: refused
	// (ErrChecksumConflict).
	SHA256Keyring string
	// SHA256Fingerprint, with SHA256Keyring, narrows it to the one key
	// with this fingerprint, as bmaptool's --fingerprint does.
	SHA256Fingerprint string
	// HTTP is how an image at an http(s) URL is read (its timeouts,
	// stall floor, retries); the zero value is httpsrc's defaults.
	HTTP httpsrc.Options
	// Cache is a directory that keeps images read from URLs (dlcache):
	// reused when their SHA-256 or the server's validator says they are
	// the image, resumed from a .part an earlier run left; "": none.
	// CacheMax bounds it (0: only the free space, which it never fills).
	Cache    string
	CacheMax int64
	// Catalog is the os_list (an http(s) URL or a file) OS is looked up
	// in; OS names one of its entries (exactly, or the start of only one
	// entry's name), whose URL is then the Image (which is left empty).
	Catalog, OS string
	// Readers is the command's enumeration of readers; nil: Run enumerates.
	Readers *drive.Readers
	// Check probes each card for a fake capacity after the pre-write
	// checks (check.go), up to a cache of CheckMaxCache bytes (0: the
	// probe's default).
	Check         bool
	CheckMaxCache int64
	// Customize, when set, is written into every card's boot partition
	// after the image (customize.Apply), each card with its own values of
	// the templates ({n}: its number in the run, from 1).
	Customize *customize.Config
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
	// Watch session the last RecentCards of them (its report holds all).
	Cards   []*Outcome
	Tally   Tally // every finished card, counted
	Started time.Time
	// Report is the session's report: a Run's every record, a Watch
	// session's none (its Config.Report keeps them as they finish).
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

// session is the state of one Run or Watch.
type session struct {
	cfg      Config
	transfer int        // the transfer size asked: Config's, or the default
	mu       sync.Mutex // serialises the observer and guards report
	report   *Report
	res      *Result
	// keep is how many finished cards res keeps (0: all, and every
	// record in report); Watch sets it.
	keep     int
	download *download      // the image file's checksum check; nil: none
	entry    *catalog.Entry // the catalog entry Image named; nil: none
	bodies   sync.Map       // *imagesrc.Source -> its *httpsrc.Body (url.go)
	pinned   string         // the cache entry a station's cards read (url.go's prefetch)
	// cached is the cache entry the image is read from, checked against
	// the SHA-256 it is named by; dropped says it did not match and was
	// removed (url.go).
	cacheMu  sync.Mutex // guards pinned, cached and dropped: a station's cards open the image at once
	cached   *cachedEntry
	dropped  bool
	stream   bool // the image is read once (a pipe, a FIFO): openTrusted
	httpOnce sync.Once
	http     *httpsrc.Client // an image at a URL's (url.go)
	// inspected is what the image's customisation takes (customize.go's
	// inspectImage): each card is held to it when it is opened.
	inspected customize.Result
}

func newSession(cfg Config) *session {
	if cfg.Lag < 0 {
		cfg.Lag = 0
	}
	now := time.Now()
	transfer := cfg.TransferSize
	if transfer == 0 {
		transfer = pipeline.DefaultTransferSize
	}
	return &session{cfg: cfg, transfer: transfer, report: &Report{Image: displayImage(cfg.Image), Started: now}, res: &Result{Started: now}}
}

func (s *session) emit(e Event) {
	if s.cfg.Observer == nil {
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
	s.cfg.Observer.Observe(e)
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

// ImageError is an image that could not be opened or read, wrapping what
// the image source said.
type ImageError struct{ Err error }

func (e *ImageError) Error() string { return e.Err.Error() }
func (e *ImageError) Unwrap() error { return e.Err }

// Class is the cause's when it says one, else Image.
func (e *ImageError) Class() failure.Class { return failure.Within(failure.Image, e.Err) }

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

// readAhead is what the image's download holds ahead of its decoder
// (httpsrc's read-ahead), 0 for an image that is not a URL.
func readAhead(imageRef string) int64 {
	if isURL(imageRef) {
		return httpsrc.ReadAheadMemory
	}
	return 0
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
	if cfg.Readers == nil {
		cfg.Readers = &drive.Readers{}
	}
	res, err, again := run(ctx, cfg, specs)
	if again {
		// A damaged cache entry was removed before the first transfer
		// was written: the cards are written again from the server,
		// without asking again.
		cfg.Confirm = nil
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
	s.checkEntryAfter(err)
	if s.dropped {
		s.emit(Note{Message: "Writing again from " + displayImage(s.cfg.Image) + ": the cache's copy was damaged and is removed"})
	}
	return res, err, s.dropped
}

func (s *session) run(ctx context.Context, cfg Config, specs []drive.Spec) (*Result, error) {
	if err := s.resolveCatalog(ctx); err != nil {
		return s.res, err
	}
	cfg.Image = s.cfg.Image // the catalog entry's URL
	s.noteCacheUnused()
	if err := cfg.VerifyMethod.CheckWrite(); err != nil {
		return s.res, err
	}
	if err := checkSizes(s.transfer, cfg.Buffers, cfg.Lag, len(specs), readAhead(cfg.Image)); err != nil {
		return s.res, err
	}
	if err := checkCustomize(&cfg); err != nil {
		return s.res, err
	}
	// A reader this user may not open is said before anything is read
	// or downloaded, with what would give access.
	if err := cfg.Readers.CheckAccess(ctx, specs); err != nil {
		return s.res, err
	}
	img, err := s.openTrusted(ctx, readOnce)
	if err != nil {
		return s.res, err
	}
	defer img.close()
	src := img.src
	plan, err := s.planWrite(ctx, src, cfg.BlockMap, len(specs) > 1 || cfg.Report != nil)
	if err != nil {
		return s.res, err
	}
	names := make([]string, len(specs))
	for i, t := range specs {
		names[i] = t.Raw
	}
	s.emit(Started{Image: displayImage(cfg.Image), Source: src, Targets: names, TransferSize: s.transfer, Buffers: buffersFor(s.transfer, cfg.Buffers), Lag: cfg.Lag})
	if err := s.trust(img, plan); err != nil {
		return s.res, err
	}
	if plan.head, err = s.inspectImage(src); err != nil {
		return s.res, err
	}
	s.startDownload(ctx, img.sum, src, "as it is written")

	cards := s.openCards(ctx, specs, src, plan)
	defer func() {
		for _, c := range cards {
			if c.d != nil {
				c.d.Close()
			}
		}
	}()
	var live []*card
	var refusals []error
	for _, c := range cards {
		switch {
		case failure.Of(c.out.Err) == failure.Usage:
			return s.res, c.out.Err // a mistake on the command line: no card is meant
		case drive.IsRefusal(c.out.Err):
			refusals = append(refusals, c.out.Err)
		case c.out.Err == nil:
			live = append(live, c)
		}
	}
	if len(cards) > 1 && len(refusals) > 0 && !cfg.SkipRefused {
		s.finish(cards, nil)
		return s.res, &RefusedError{Refused: refusals, Cards: len(cards)}
	}
	if len(live) > 0 && cfg.Confirm != nil {
		devs := make([]*drive.Device, len(live))
		for i, c := range live {
			devs[i] = c.d
		}
		if err := cfg.Confirm(devs, src); err != nil {
			return s.res, err
		}
	}
	if len(live) > 0 {
		if err := s.writeCards(ctx, src, plan, live); err != nil {
			s.finish(cards, nil)
			return s.res, err
		}
	}
	return s.res, s.finish(cards, nil)
}

// openCards opens every target together and checks each card.
func (s *session) openCards(ctx context.Context, specs []drive.Spec, src *image.Source, plan *writePlan) []*card {
	newFile := max(expectedSize(src), 0)
	if plan.m != nil && newFile == 0 {
		newFile = plan.m.ImageSize
	}
	devs, errs := drive.OpenAll(ctx, specs, drive.Options{
		Force: s.cfg.Force, Image: s.cfg.Image, NewFileSize: (newFile + 511) / 512 * 512, Readers: s.cfg.Readers,
		OnNotice: func(reader string, n usbms.Notice) { s.emit(Note{Card: reader, Message: n.Text, Notice: &n}) },
	})
	cards := make([]*card, len(specs))
	var wg sync.WaitGroup
	for i, t := range specs {
		c := &card{d: devs[i], spec: t.Raw, n: i + 1, out: Outcome{Target: t.Raw}}
		cards[i] = c
		if errs[i] != nil {
			c.fail(errs[i])
			continue
		}
		if !s.cfg.Check {
			s.opened(ctx, c, src)
			continue
		}
		// Each card's probe on its own goroutine: it takes seconds.
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.opened(ctx, c, src)
		}()
	}
	wg.Wait()
	return cards
}

// opened describes a card that opened and runs the pre-write checks (and
// with Config.Check the fake-card probe).
func (s *session) opened(ctx context.Context, c *card, src *image.Source) {
	d := c.d
	c.out.Target, c.out.Capacity, c.out.Serial = d.Name, d.Capacity(), readerSerial(d)
	var note string
	fit := blockdev.FitTransfer(d.Dev, s.transfer)
	c.transfer, note = fit.Size, fit.Note(d.Name)
	c.out.Identity = identityOf(d, c.transfer)
	s.emit(Opened{Card: d.Name, Capacity: d.Capacity(), BlockSize: d.Dev.BlockSize(), TransferSize: c.transfer, Transport: transportOf(d)})
	if note != "" {
		s.emit(Note{Card: d.Name, Message: note})
	}
	c.fail(drive.Check(d, src, drive.CheckOptions{TransferSize: c.transfer, Force: s.cfg.Force}))
	s.customizeFor(c)
	if s.cfg.Check && !c.failed() {
		s.checkFake(ctx, c, src)
	}
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
	Errs              []error // each failed card's error; of Watch, the first of each class
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
// once: a Watch session runs until stopped) and says what became of it.
func (s *session) record(c *card) {
	c.out.Image, c.out.Station, c.out.Operator = displayImage(s.cfg.Image), s.cfg.Station, s.cfg.Operator
	out := c.out
	rec := RecordOf(&out, s.cfg.ExitCodes)
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
	if s.cfg.Report != nil {
		saveErr = s.cfg.Report.Add(s.report, rec)
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
