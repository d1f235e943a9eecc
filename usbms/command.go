package usbms

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/usbflash/usbflash/scsi"
)

// span is the block range a command covers, for error messages.
type span struct {
	lba, blocks int64
}

// do runs one command with the sense policy of scsi.Action: repeat on
// UNIT ATTENTION, ABORTED COMMAND, HARDWARE ERROR, a MEDIUM ERROR that may
// pass, sense data that is empty or unreadable, and incomplete transfers,
// up to Retries times; wait on NOT READY states that pass up to ReadyWait;
// take RECOVERED ERROR as success; fail otherwise. Errors are
// *CommandError.
func (l *LUN) do(ctx context.Context, r request, where span) (int, error) {
	r.lun = l.lun
	l.t.consumePortReset() // only this command's own ladder counts below
	retries, waits := 0, 0
	maxWaits := int(l.opts.ReadyWait / l.opts.RetryBackoff)
	for {
		n, err := l.t.exec(ctx, r)
		if err != nil && action(err, l.wrote) == scsi.Accept {
			err = nil
		}
		if err == nil && r.dir != NoData && n < len(r.data) && needsAll(r.cdb) {
			err = fmt.Errorf("%w: %d of %d bytes", ErrIncomplete, n, len(r.data))
		}
		if err == nil {
			return n, nil
		}
		if isResetAttention(err) && l.t.consumePortReset() {
			// The reader reports the port reset the ladder made. The
			// command goes once more, without a ladder of its own: a
			// reader the ladder did not bring back fails for good.
			r.maxResets, r.portReset, r.shrink = 0, false, false
			continue
		}
		switch action(err, l.wrote) {
		case scsi.Retry:
			if retries < l.opts.Retries {
				retries++
				continue
			}
		case scsi.Wait:
			if waits < maxWaits {
				waits++
				if serr := l.t.sleep(ctx, l.opts.RetryBackoff); serr != nil {
					return 0, l.cmdError(r, where, serr)
				}
				continue
			}
			err = fmt.Errorf("%w after %v: %w", ErrNotReady, l.opts.ReadyWait, err)
		}
		if l.wrote && scsi.IsMediumSwap(err) {
			l.changed = true
			err = fmt.Errorf("%w: %w", ErrMediumChanged, err)
		}
		return n, l.cmdError(r, where, err)
	}
}

// action decides what to do about a failed command. A medium change after
// blocks were written is fatal: the card now in the slot may be another one.
func action(err error, wrote bool) scsi.Action {
	if errors.Is(err, ErrIncomplete) {
		return scsi.Retry
	}
	if errors.Is(err, errNoSenseData) && !errors.Is(err, ErrNoDevice) {
		// Linux takes a failure without usable sense data for an error
		// of the host, which it repeats.
		return scsi.Retry
	}
	se, ok := scsi.AsSense(err)
	if !ok {
		return scsi.Fail
	}
	if wrote && scsi.IsMediumSwap(se) {
		return scsi.Fail
	}
	return se.Action()
}

// isResetAttention reports whether err is UNIT ATTENTION 29/xx: a reset
// occurred.
func isResetAttention(err error) bool {
	se, ok := scsi.AsSense(err)
	return ok && se.Key == scsi.UnitAttention && se.ASC == scsi.ASCResetOccurred
}

// needsAll reports whether a command must move its whole data buffer to
// have succeeded: READ and WRITE must; INQUIRY and the like may answer less
// than the allocation.
func needsAll(cdb []byte) bool {
	switch cdb[0] {
	case scsi.OpRead10, scsi.OpRead16, scsi.OpWrite10, scsi.OpWrite16:
		return true
	}
	return false
}

func (l *LUN) cmdError(r request, where span, err error) error {
	return &CommandError{Op: opName(r.cdb), Device: l.t.opts.Name, LUN: l.lun, LBA: where.lba, Blocks: where.blocks, Err: markMedium(err)}
}

// sleep pauses between commands: on the Endpoint's clock when it has
// one (Sleeper), else d or until ctx is done.
func (t *Transport) sleep(ctx context.Context, d time.Duration) error {
	if s, ok := t.ep.(Sleeper); ok {
		return s.Sleep(ctx, d)
	}
	return sleep(ctx, d)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
