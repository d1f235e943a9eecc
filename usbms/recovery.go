package usbms

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// run executes a command with the recovery ladder of BOT 5.3.4 and Linux's
// usb-storage: each failed attempt (invalid CSW, phase error, timeout,
// transfer error) is followed by reset recovery and a new attempt, up to
// r.maxResets times; then the port is reset and the command tried once more.
// A vanished device or a cancelled ctx ends the ladder at once.
func (t *Transport) run(ctx context.Context, r request) (result, error) {
	if err := ctx.Err(); err != nil {
		return result{}, err
	}
	resets := 0
	portReset := false
	for {
		res, err := t.timedAttempt(ctx, r)
		if err == nil {
			return res, nil
		}
		// A UAS device that answered with a RESPONSE IU refused the
		// IU, not the size of the command.
		if r.shrink && resets == 0 && !portReset && ctx.Err() == nil && !errors.Is(err, ErrUASResponse) {
			if cerr := t.choked(ctx, r, err); cerr != nil {
				return result{}, cerr
			}
		}
		if errors.Is(err, ErrNoDevice) {
			return result{}, t.transportError(err)
		}
		if ctx.Err() != nil {
			// Leave the device able to take the next command (a sync
			// after Ctrl-C) even though this one is abandoned.
			_ = t.p.recover(context.WithoutCancel(ctx))
			return result{}, err
		}
		var rerr error
		if resets < r.maxResets {
			resets++
			t.notify(StepReset, fmt.Sprintf("%s: resetting the reader (reset %d of %d)", whyFailed(r, err), resets, r.maxResets))
			if rerr = t.p.recover(ctx); rerr == nil {
				continue
			}
			if errors.Is(rerr, ErrNoDevice) {
				return result{}, t.transportError(rerr)
			}
		}
		if r.portReset && !portReset {
			portReset = true
			t.notify(StepPortReset, fmt.Sprintf("%s after %d resets: resetting the USB port", whyFailed(r, err), resets))
			perr := t.resetPort(ctx)
			if perr == nil {
				t.portResetDone = true
				continue
			}
			if errors.Is(perr, ErrNoDevice) {
				return result{}, t.transportError(perr)
			}
			return result{}, fmt.Errorf("%w: %d resets, then the port reset failed (%v): %w",
				ErrRecoveryFailed, resets, perr, err)
		}
		if rerr != nil {
			return result{}, fmt.Errorf("%w: reset failed (%v): %w", ErrRecoveryFailed, rerr, err)
		}
		// Whatever state the last attempt left behind must not poison
		// the next command.
		if r.probe {
			t.notify(StepReset, fmt.Sprintf("%s: resetting the reader and going on without it", whyFailed(r, err)))
		}
		_ = t.p.recover(ctx)
		return result{}, &recoveryError{op: opName(r.cdb), resets: resets, portReset: portReset, err: err}
	}
}

// recoveryError is a command that failed through the whole recovery
// ladder. It says what happened as the user saw it (no answer for so
// long, and what was tried), not the transfer step deep inside the
// attempt that gave up.
type recoveryError struct {
	op        string
	resets    int
	portReset bool
	err       error // the last attempt's
}

func (e *recoveryError) Error() string {
	var tried []string
	switch e.resets {
	case 0:
	case 1:
		tried = append(tried, "a reset")
	default:
		tried = append(tried, fmt.Sprintf("%d resets", e.resets))
	}
	if e.portReset {
		tried = append(tried, "a USB port reset")
	}
	var na *noAnswerError
	if errors.As(e.err, &na) {
		msg := fmt.Sprintf("%v: no answer to %s within %v", ErrRecoveryFailed, e.op, na.wait)
		if len(tried) > 0 {
			msg += ", nor after " + strings.Join(tried, " and ")
		}
		return msg
	}
	if len(tried) == 0 {
		return fmt.Sprintf("%v: %v", ErrRecoveryFailed, e.err)
	}
	return fmt.Sprintf("%v after %s: %v", ErrRecoveryFailed, strings.Join(tried, " and "), e.err)
}

func (e *recoveryError) Unwrap() []error { return []error{ErrRecoveryFailed, e.err} }

// choked ends a large READ or WRITE at its first failure when a smaller
// command might not fail so: the device is made ready for the next
// command (reset recovery; a port reset when it dropped off the bus and
// may be back) and a *chokeError says to send the range again in smaller
// commands. It returns nil when the ladder should go on as for any
// command: a device that is gone for good, or a recovery that failed.
//
// A reader that dropped off the bus is looked for again at every step
// down, 120 KiB commands included: the port reset finds it again (both
// backends reopen it at its port when it re-enumerated) whatever the size
// of the command it dropped at, and the ladder is three steps long.
func (t *Transport) choked(ctx context.Context, r request, err error) error {
	if errors.Is(err, ErrNoDevice) {
		t.notify(StepPortReset, fmt.Sprintf("the reader dropped off the bus during %s of %s: resetting the USB port to find it again", opName(r.cdb), units.FormatSize(int64(len(r.data)))))
		if t.resetPort(ctx) != nil {
			return nil
		}
		return &chokeError{err: err}
	}
	t.notify(StepReset, fmt.Sprintf("%s (%s): resetting the reader", whyFailed(r, err), units.FormatSize(int64(len(r.data)))))
	if rerr := t.p.recover(ctx); rerr != nil {
		return nil
	}
	return &chokeError{err: err}
}

// chokeError is a large READ or WRITE that failed in a way a smaller one
// might not; the device is ready for the next command.
type chokeError struct{ err error }

func (e *chokeError) Error() string { return e.err.Error() }
func (e *chokeError) Unwrap() error { return e.err }

// timedAttempt bounds one attempt by the per-command timeout. A timeout is
// reported as such so that the final error says the device stopped
// answering, not just "context deadline exceeded". An Endpoint that is a
// DeadlineSetter gets the deadline directly, which spares a context and a
// timer per command.
func (t *Transport) timedAttempt(ctx context.Context, r request) (result, error) {
	t.commands++
	d := t.timeout(len(r.data))
	if ds, ok := t.ep.(DeadlineSetter); ok {
		ds.SetDeadline(time.Now().Add(d))
		res, err := t.p.attempt(ctx, r)
		ds.SetDeadline(time.Time{})
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = &noAnswerError{wait: d, err: err}
		}
		return res, err
	}
	actx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	res, err := t.p.attempt(actx, r)
	// An Endpoint on a modelled clock ends a transfer at the deadline
	// without the deadline having passed here.
	if err != nil && ctx.Err() == nil && (errors.Is(actx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)) {
		err = &noAnswerError{wait: d, err: err}
	}
	return res, err
}

// noAnswerError is an attempt the device did not answer in time.
type noAnswerError struct {
	wait time.Duration
	err  error
}

// Error says how long the device was waited for; which step of the
// attempt was waiting (the CSW, a data phase) is the transport's detail,
// reachable with errors.Is and errors.As.
func (e *noAnswerError) Error() string { return fmt.Sprintf("no answer within %v", e.wait) }
func (e *noAnswerError) Unwrap() error { return e.err }

// whyFailed says in a few words why an attempt failed, for recovery notices.
func whyFailed(r request, err error) string {
	var na *noAnswerError
	if errors.As(err, &na) {
		return fmt.Sprintf("no answer to %s for %v", opName(r.cdb), na.wait)
	}
	return opName(r.cdb) + " failed"
}

// notify tells the observer what recovery is about to try: a reader that
// stopped answering costs tens of seconds, which must not pass in silence.
func (t *Transport) notify(step RecoveryStep, text string) {
	t.tell(Notice{Kind: NoticeRecovery, Step: step, Text: text})
}

// tell passes a Notice to OnNotice, or its text to OnRecovery.
func (t *Transport) tell(n Notice) {
	switch {
	case t.opts.OnNotice != nil:
		t.opts.OnNotice(n)
	case t.opts.OnRecovery != nil:
		t.opts.OnRecovery(n.Text)
	}
}

func (t *Transport) resetPort(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, t.opts.ResetTimeout)
	defer cancel()
	if err := t.ep.ResetPort(pctx); err != nil {
		return fmt.Errorf("port reset: %w", err)
	}
	return nil
}
