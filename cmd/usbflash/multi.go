package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"usbflash/fanout"
	"usbflash/imagesrc"
	"usbflash/internal/units"
	"usbflash/pipeline"
	"usbflash/usbms"
	"usbflash/usbms/libusb"
	"usbflash/usbms/sim"
)

// DefaultLag is how many transfers a card of a many-card write may fall
// behind the others before it holds them back (--lag). Eight 1 MiB
// transfers absorb the jitter of equal readers (BenchmarkGroup: 8 cards
// take 1.00x the time of one with it, 1.10x in lockstep) for 8 MiB of
// memory per card.
const DefaultLag = 8

// boundSlowest marks the card of a many-card write that was busy longest:
// its own speed bounded everyone's.
const boundSlowest bound = "slowest"

// card is one opened target of a many-card write and what became of it.
type card struct {
	t       target
	d       *device
	outcome cardOutcome
}

func (c *card) fail(err error) {
	if c.outcome.Error == "" {
		c.outcome.Error = err.Error()
		c.outcome.Code = exitCode(err)
	}
}

func (c *card) failed() bool { return c.outcome.Error != "" }

// writeMany writes one image to several cards at once. Every card is opened
// and checked before any is written; one decode feeds them all; a card that
// fails drops out with its own error and the others go on; each card is
// synced and verified on its own.
func (a *app) writeMany(ctx context.Context, rep reporter, image string, ts []target, f writeFlags, transfer int64) error {
	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(err)
	}
	defer src.Close()
	s := &session{Image: image, Started: time.Now()}

	cards, err := a.openCards(ctx, ts, src, f, image)
	defer func() {
		for _, c := range cards {
			if c.d != nil {
				c.d.Close()
			}
		}
	}()
	if err != nil {
		return err
	}
	var live []*card
	for _, c := range cards {
		if !c.failed() {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return a.finishMany(rep, s, cards, f, &refusedError{"every card was refused; nothing was written"})
	}
	if !f.yes {
		if err := a.confirmMany(live, image, src); err != nil {
			return err
		}
	}

	werr := a.writeCards(ctx, rep, image, src, live, f, transfer)
	return a.finishMany(rep, s, cards, f, werr)
}

// writeCards writes the image to cards that are open and checked: one
// decode, a fanout group, then each card verified on its own. It records
// every card's outcome and says so in a "card" event, and returns an error
// only when the stream itself failed (the image, or Ctrl-C).
func (a *app) writeCards(ctx context.Context, rep reporter, image string, src *imagesrc.Source, live []*card, f writeFlags, transfer int64) error {
	started := time.Now()
	for _, c := range live {
		c.outcome.Started = started
		c.d.markWritten() // from here on the card is ours to keep, written or not
	}
	for _, c := range live {
		if t, _ := fitTransfer(c.d, transfer); t < transfer {
			transfer = t // the group uses what every reader takes
		}
	}
	names := make([]string, len(live))
	targets := make([]fanout.Target, len(live))
	for i, c := range live {
		names[i] = c.d.name
		targets[i] = fanout.Target{Name: c.d.name, Dev: c.d.dev}
	}
	rep.event(&manyStartEvent{
		eventHeader: eventHeader{Event: evStart}, Command: cmdWrite,
		Image: image, Format: src.Format.String(), Size: src.Size, SizeExact: src.SizeExact,
		Targets: names, TransferSize: transfer, Buffers: f.buffers, Lag: f.lag,
	}, fmt.Sprintf("Writing %s (%s, %s) to %s with %s transfers: %s",
		image, src.Format, describeSize(src), plural(len(live), "card"), units.FormatSize(transfer), strings.Join(names, ", ")))

	g, err := fanout.New(targets, fanout.Options{Lag: f.lag, TransferSize: int(transfer)})
	if err != nil {
		for _, c := range live {
			c.fail(&usageError{err.Error()})
		}
		a.cardEvents(rep, live)
		return nil
	}
	bars := newCardBars(rep, names, expectedSize(src))
	res, werr := pipeline.Write(ctx, g, src, pipeline.WriteOptions{
		TransferSize: int(transfer), Buffers: f.buffers, ExpectedSize: expectedSize(src),
		Sync: true, HashAlg: hashFor(f.noVerify),
		Progress: func(p pipeline.Progress) { bars.update(p, g.Results()) },
	})
	g.Close()
	bars.done()
	for i, r := range g.Results() {
		c := live[i]
		c.outcome.Bytes = min(r.Written, res.Bytes)
		c.outcome.Finished = time.Now()
		c.outcome.Rate = rate(c.outcome.Bytes, c.outcome.Finished.Sub(c.outcome.Started))
		if r.Err != nil {
			c.fail(r.Err) // the device's errors name it
		}
	}
	if werr != nil && !errors.Is(werr, fanout.ErrAllFailed) {
		// The stream itself failed (the image, or Ctrl-C): every card
		// still being written shares that fate.
		for _, c := range live {
			c.fail(werr)
		}
		a.cardEvents(rep, live)
		return werr
	}
	for _, c := range live {
		c.outcome.SHA256 = hex.EncodeToString(res.SHA256[:])
	}
	pacer := slowestCard(live, g.Results())
	for _, c := range live {
		switch {
		case c.failed():
		case c.d.name == pacer && len(live) > 1:
			c.outcome.Bound = boundSlowest
		default:
			c.outcome.Bound = boundDevice
		}
	}
	if !f.noVerify {
		a.verifyCards(ctx, rep, live, res, int(transfer))
	}
	for _, c := range live {
		if f.eject && !c.failed() && c.d.lun != nil {
			if err := c.d.lun.Eject(ctx); err != nil {
				msg := fmt.Sprintf("%s: eject failed (the image is written and synced): %v", c.d.name, err)
				rep.event(&noteEvent{eventHeader{Event: evNote}, msg}, msg)
			}
		}
	}
	a.cardEvents(rep, live)
	return nil
}

// cardEvents says what became of each card, one event each.
func (a *app) cardEvents(rep reporter, cards []*card) {
	for _, c := range cards {
		rep.event(&cardEvent{eventHeader{Event: evCard}, c.outcome}, "")
	}
}

// openCards opens every target and runs every check that can fail before
// anything is written. A refused card is recorded and, with
// --skip-refused, left out; without it the whole write is refused, naming
// every refusal. Targets that are slots of one reader share one open of it.
func (a *app) openCards(ctx context.Context, ts []target, src *imagesrc.Source, f writeFlags, image string) ([]*card, error) {
	opts := openOptions{force: f.force, image: image}
	cards := make([]*card, len(ts))
	groups := map[string][]int{}
	var order []string
	for i, t := range ts {
		cards[i] = &card{t: t, outcome: cardOutcome{Target: t.raw}}
		key, err := readerKey(ctx, t)
		if err != nil {
			cards[i].fail(err)
			continue
		}
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	for _, key := range order {
		idx := groups[key]
		if len(idx) == 1 {
			d, err := openTarget(ctx, ts[idx[0]], opts)
			cards[idx[0]].opened(d, err, src)
			continue
		}
		group := make([]target, len(idx))
		for j, i := range idx {
			group[j] = ts[i]
		}
		ds, errs := openShared(ctx, group, opts)
		for j, i := range idx {
			cards[i].opened(ds[j], errs[j], src)
		}
	}
	var refusals []string
	for _, c := range cards {
		if c.failed() && c.outcome.Code == exitUsage {
			return cards, &usageError{c.outcome.Error} // a mistake on the command line: no card is meant
		}
		if c.failed() {
			refusals = append(refusals, c.outcome.Error)
		}
	}
	if len(refusals) > 0 && !f.skipRefused {
		return cards, &refusedError{fmt.Sprintf("%d of %d cards cannot be written, so none was (--skip-refused writes the others):\n  %s",
			len(refusals), len(ts), strings.Join(refusals, "\n  "))}
	}
	return cards, nil
}

// opened records how opening the card went and checks it.
func (c *card) opened(d *device, err error, src *imagesrc.Source) {
	if err == nil {
		c.d = d
		c.outcome.Target, c.outcome.Capacity = d.name, d.capacity()
		if d.usb != nil {
			c.outcome.Serial = d.usb.Serial
		}
		err = checkBeforeWrite(d, src)
	}
	if err != nil {
		c.fail(err)
	}
}

// readerKey names the reader a target lives on, so slots of one reader
// can share it; file: targets share nothing.
func readerKey(ctx context.Context, t target) (string, error) {
	switch t.kind {
	case targetUSB:
		info, err := findUSB(ctx, t)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("usb:%d.%d", info.Bus, info.Address), nil
	case targetSim:
		abs, err := filepath.Abs(t.path)
		if err != nil {
			return "", &usageError{fmt.Sprintf("target %s: %v", t.raw, err)}
		}
		return "sim:" + abs, nil
	}
	return "file:" + t.raw, nil
}

// openShared opens one reader once for several of its slots: its
// interface can be claimed only once, and Bulk-Only Transport runs one
// command at a time, so the slots share one transport. Each slot gets its
// own device or error.
func openShared(ctx context.Context, group []target, opts openOptions) ([]*device, []error) {
	ds, errs := make([]*device, len(group)), make([]error, len(group))
	failAll := func(err error) ([]*device, []error) {
		for i := range errs {
			errs[i] = err
		}
		return ds, errs
	}
	t0 := group[0]
	for _, t := range group {
		if t.lun < 0 {
			return failAll(&usageError{fmt.Sprintf("targets %s and %s are the same reader: name each slot with /LUN (lun=N for sim:)", t0.raw, group[1].raw)})
		}
	}
	var (
		ep      usbms.Endpoint
		closeEP func() error
		info    *libusb.Info
		name    string
	)
	switch t0.kind {
	case targetUSB:
		found, err := findUSB(ctx, t0)
		if err != nil {
			return failAll(err)
		}
		if err := sameFileAsImage(opts.image, t0, &found); err != nil {
			return failAll(err)
		}
		ud, err := libusb.Open(ctx, found, libusb.OpenOptions{Force: opts.force})
		if err != nil {
			return failAll(targetOpenError(t0, err))
		}
		ep, closeEP, info, name = ud, ud.Close, &found, usbName(found)
	case targetSim:
		if err := sameFileAsImage(opts.image, t0, nil); err != nil {
			return failAll(err)
		}
		sd, err := sim.Open(t0.spec)
		if err != nil {
			return failAll(targetOpenError(t0, err))
		}
		ep, closeEP, name = sd, sd.Close, "sim:"+t0.path
	default:
		return failAll(&usageError{fmt.Sprintf("target %s cannot share a reader", t0.raw)})
	}
	tr := usbms.NewTransport(ep, usbms.TransportOptions{Name: name, OnRecovery: opts.onRecovery})
	// The reader closes with its last slot.
	var mu sync.Mutex
	open := len(group)
	release := func() error {
		mu.Lock()
		defer mu.Unlock()
		if open--; open == 0 {
			return closeEP()
		}
		return nil
	}
	for i, t := range group {
		ds[i], errs[i] = openLUNOn(ctx, t, name, tr, info, release, opts)
	}
	return ds, errs
}

// confirmMany lists every card and asks once.
func (a *app) confirmMany(live []*card, image string, src *imagesrc.Source) error {
	if !a.interactive {
		return fmt.Errorf("%w: no terminal to ask whether to overwrite %d cards", errNotConfirmed, len(live))
	}
	var b strings.Builder
	for _, c := range live {
		fmt.Fprintf(&b, "Target: %s\n%s\n", c.d.name, identityLine(c.d))
	}
	fmt.Fprintf(a.stderr, "%sWrite %s (%s, %s) to these %d cards? ALL DATA ON THEM WILL BE LOST. [y/N] ",
		b.String(), image, src.Format, describeSize(src), len(live))
	if !a.answeredYes() {
		return &refusedError{fmt.Sprintf("not confirmed: nothing was written to the %d cards", len(live))}
	}
	return nil
}

// verifyCards reads every written card back at once, each against the
// image's hash.
func (a *app) verifyCards(ctx context.Context, rep reporter, live []*card, res pipeline.WriteResult, transfer int) {
	rep.event(&phaseEvent{eventHeader{Event: evPhase}, phaseVerify}, "")
	var wg sync.WaitGroup
	for _, c := range live {
		if c.failed() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pipeline.VerifyHash(ctx, c.d.dev, res.Bytes, res.SHA256, pipeline.VerifyOptions{Name: c.d.name, TransferSize: transfer})
			if err != nil {
				c.fail(err)
				return
			}
			c.outcome.Verified = true
		}()
	}
	wg.Wait()
}

// slowestCard names the live card that was busy longest: in lockstep it
// set everyone's pace.
func slowestCard(live []*card, results []fanout.Result) string {
	var name string
	var most time.Duration
	for i, r := range results {
		if r.Err == nil && r.Busy > most {
			most, name = r.Busy, live[i].d.name
		}
	}
	return name
}

// finishMany records every card of a many-card write (those refused
// before the write get their event here) and ends the session.
func (a *app) finishMany(rep reporter, s *session, cards []*card, f writeFlags, err error) error {
	var refused []*card
	for _, c := range cards {
		s.Cards = append(s.Cards, c.outcome)
		if c.failed() && c.outcome.Started.IsZero() { // refused: never reached the write
			refused = append(refused, c)
		}
	}
	a.cardEvents(rep, refused)
	for _, c := range cards {
		if s.SHA256 == "" {
			s.SHA256 = c.outcome.SHA256
		}
	}
	return a.summarizeSession(rep, s, f, err)
}

// summarizeSession prints the table, saves --report and picks the exit
// code: 0 when every card succeeded, the failure's own code when all failed
// alike, exitPartial when some did and some did not.
func (a *app) summarizeSession(rep reporter, s *session, f writeFlags, err error) error {
	ok := 0
	codes := map[int]bool{}
	for _, c := range s.Cards {
		if c.Error != "" {
			codes[c.Code] = true
		} else {
			ok++
		}
	}
	rep.event(&manySummaryEvent{
		eventHeader: eventHeader{Event: evSummary}, Command: cmdWrite,
		Cards: len(s.Cards), Succeeded: ok, Failed: len(s.Cards) - ok, SHA256: s.SHA256,
		ElapsedS: time.Since(s.Started).Seconds(),
	}, cardTable(s.Cards, f.noVerify))
	if f.report != "" {
		if rerr := s.save(f.report); rerr != nil {
			rep.event(&noteEvent{eventHeader{Event: evNote}, rerr.Error()}, "usbflash: "+rerr.Error())
		}
	}
	n := len(s.Cards)
	switch {
	case err != nil:
		return err
	case ok == n:
		return nil
	case ok > 0:
		return &codedError{exitPartial, fmt.Errorf("%d of %d cards were written, %d failed (see the table)", ok, n, n-ok)}
	case len(codes) == 1:
		for code := range codes {
			return &codedError{code, fmt.Errorf("every card failed (see the table)")}
		}
	}
	return &codedError{exitDevice, fmt.Errorf("every card failed (see the table)")}
}

// cardTable is the final per-card table a person reads.
func cardTable(cards []cardOutcome, noVerify bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %-14s %9s %9s %-8s %s\n", "TARGET", "SERIAL", "CAPACITY", "MB/s", "VERIFIED", "RESULT")
	for _, c := range cards {
		verified := "yes"
		switch {
		case noVerify:
			verified = "skipped"
		case !c.Verified:
			verified = "no"
		}
		result := "ok"
		switch {
		case c.Error != "":
			result = c.Error
		case c.Bound == boundSlowest:
			result = "ok (the slowest card: it set the pace)"
		}
		fmt.Fprintf(&b, "%-28s %-14s %9s %9.1f %-8s %s\n", c.Target, orDash(c.Serial),
			units.FormatSize(c.Capacity), c.Rate/1e6, verified, result)
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeArgs is IMAGE and at least one TARGET, or IMAGE alone with --all.
func writeArgs(f *writeFlags) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case (f.all || f.watch) && len(args) != 1:
			return &usageError{fmt.Sprintf("write --all and --watch take only the IMAGE (got %d arguments): they find the readers themselves", len(args))}
		case f.all && f.watch:
			return &usageError{"--all and --watch are two ways to choose the readers: give one"}
		case !f.all && !f.watch && len(args) < 2:
			return &usageError{fmt.Sprintf("write needs IMAGE and at least one TARGET (got %d argument(s)); see 'usbflash write --help'", len(args))}
		}
		return nil
	}
}

// writeTargets parses the TARGET arguments, or with --all finds every
// reader slot that holds a card and is not in use.
func (a *app) writeTargets(ctx context.Context, args []string, f writeFlags) ([]target, error) {
	if f.all {
		return a.allTargets(ctx)
	}
	seen := map[string]bool{}
	var ts []target
	for _, arg := range args {
		if seen[arg] {
			return nil, &usageError{fmt.Sprintf("target %s is given twice", arg)}
		}
		seen[arg] = true
		t, err := parseTarget(arg)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return ts, nil
}

// allTargets is every slot of every supported reader with a card in it
// whose disk is not in use; the rest are named in a note and left alone.
func (a *app) allTargets(ctx context.Context) ([]target, error) {
	infos, err := libusb.List(ctx)
	if err != nil {
		return nil, &codedError{exitDevice, fmt.Errorf("listing USB readers: %w", err)}
	}
	var ts []target
	for i, info := range infos {
		r := describeReader(ctx, i, info)
		if !r.Supported {
			continue
		}
		for _, l := range r.LUNs {
			if !l.Medium || len(l.Mounted) > 0 || l.Error != "" {
				if len(l.Mounted) > 0 {
					fmt.Fprintf(a.stderr, "usbflash: leaving %s/%d alone: in use (%s)\n", r.Target, l.LUN, strings.Join(l.Mounted, ", "))
				}
				continue
			}
			raw := fmt.Sprintf("usb:%d.%d", info.Bus, info.Address)
			if len(r.LUNs) > 1 {
				raw += fmt.Sprintf("/%d", l.LUN)
			}
			t, err := parseTarget(raw)
			if err != nil {
				return nil, err
			}
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return nil, &refusedError{fmt.Sprintf("--all: none of the %d readers holds a card that is not in use; run 'usbflash list'", len(infos))}
	}
	return ts, nil
}
