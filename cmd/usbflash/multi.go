package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"usbflash/fanout"
	"usbflash/imagesrc"
	"usbflash/internal/units"
	"usbflash/pipeline"
	"usbflash/usbms/libusb"
)

// DefaultLag is how many transfers a card of a many-card write may fall
// behind the others before it holds them back (--lag). Eight 1 MiB
// transfers absorb the jitter of equal readers (BenchmarkGroup: 8 cards
// take 1.00x the time of one with it, 1.10x in lockstep) for 8 MiB of
// memory per card.
const DefaultLag = 8

// What bounded a card of a many-card write: its own speed, or, for the
// slowest card, everyone's.
const (
	boundDevice  = "device"
	boundSlowest = "slowest"
)

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
func (a *app) writeMany(ctx context.Context, image string, ts []target, f writeFlags, transfer int64) (err error) {
	rep := a.reporterFor(f.asJSON, f.quiet)
	defer func() {
		if err != nil {
			rep.fail(err, exitCode(err))
			err = &reportedError{err}
		}
	}()
	src, err := imagesrc.Open(image)
	if err != nil {
		return sourceError(image, err)
	}
	defer src.Close()
	s := &session{Image: image, Started: time.Now()}

	cards, err := a.openCards(ctx, ts, src, f)
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
	rep.event("start", map[string]any{
		"image": image, "format": src.Format.String(), "size": src.Size, "size_exact": src.SizeExact,
		"targets": names, "transfer_size": transfer, "buffers": f.buffers, "lag": f.lag,
	}, fmt.Sprintf("Writing %s (%s, %s) to %d cards with %s transfers: %s",
		image, src.Format, describeSize(src), len(live), units.FormatSize(transfer), strings.Join(names, ", ")))

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
		Sync: true, HashAlg: hashFor(f),
		Progress: func(p pipeline.Progress) { bars.update(p, g.Results()) },
	})
	g.Close()
	bars.done()
	for i, r := range g.Results() {
		c := live[i]
		c.outcome.Bytes = min(r.Written, res.Bytes)
		c.outcome.Finished = time.Now()
		c.outcome.Rate = rate(c.outcome.Bytes, r.Busy)
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
				rep.event("note", map[string]any{"target": c.d.name, "message": "eject failed: " + err.Error()},
					fmt.Sprintf("%s: eject failed (the image is written and synced): %v", c.d.name, err))
			}
		}
	}
	a.cardEvents(rep, live)
	return nil
}

// cardEvents says what became of each card, one event each.
func (a *app) cardEvents(rep reporter, cards []*card) {
	for _, c := range cards {
		rep.event("card", map[string]any{
			"target": c.outcome.Target, "serial": c.outcome.Serial, "capacity": c.outcome.Capacity,
			"bytes": c.outcome.Bytes, "rate": c.outcome.Rate, "bound": c.outcome.Bound,
			"verified": c.outcome.Verified, "sha256": c.outcome.SHA256,
			"error": c.outcome.Error, "exit_code": c.outcome.Code,
		}, "")
	}
}

// openCards opens every target and runs every check that can fail before
// anything is written. A refused card is recorded and, with
// --skip-refused, left out; without it the whole write is refused, naming
// every refusal.
func (a *app) openCards(ctx context.Context, ts []target, src *imagesrc.Source, f writeFlags) ([]*card, error) {
	var cards []*card
	var refusals []string
	for _, t := range ts {
		c := &card{t: t, outcome: cardOutcome{Target: t.raw}}
		cards = append(cards, c)
		d, err := openTarget(ctx, t, openOptions{force: f.force})
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
			refusals = append(refusals, err.Error())
		}
	}
	if len(refusals) > 0 && !f.skipRefused {
		return cards, &refusedError{fmt.Sprintf("%d of %d cards cannot be written, so none was (--skip-refused writes the others):\n  %s",
			len(refusals), len(ts), strings.Join(refusals, "\n  "))}
	}
	return cards, nil
}

// confirmMany lists every card and asks once.
func (a *app) confirmMany(live []*card, image string, src *imagesrc.Source) error {
	if !a.interactive {
		return &refusedError{fmt.Sprintf("not confirmed: no terminal to ask whether to overwrite %d cards; pass --yes to write without asking", len(live))}
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
	rep.event("phase", map[string]any{"phase": pipeline.PhaseVerify}, "")
	var wg sync.WaitGroup
	for _, c := range live {
		if c.failed() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pipeline.VerifyHash(ctx, named(c.d), res.Bytes, res.SHA256, pipeline.VerifyOptions{TransferSize: transfer})
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
	rep.event("summary", map[string]any{
		"cards": len(s.Cards), "succeeded": ok, "failed": len(s.Cards) - ok, "sha256": s.SHA256,
		"elapsed_s": time.Since(s.Started).Seconds(),
	}, cardTable(s.Cards, f.noVerify))
	if f.report != "" {
		if rerr := s.save(f.report); rerr != nil {
			rep.event("note", map[string]any{"message": rerr.Error()}, "usbflash: "+rerr.Error())
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
