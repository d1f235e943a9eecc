package usbdev

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// SortInfos orders by bus, then port chain, then configuration, interface
// and alternate setting: stable across runs, so `usbflash list` indexes are.
func SortInfos(infos []Info) {
	sort.SliceStable(infos, func(a, b int) bool {
		x, y := infos[a], infos[b]
		if x.Bus != y.Bus {
			return x.Bus < y.Bus
		}
		for i := 0; i < len(x.Port) && i < len(y.Port); i++ {
			if x.Port[i] != y.Port[i] {
				return x.Port[i] < y.Port[i]
			}
		}
		if len(x.Port) != len(y.Port) {
			return len(x.Port) < len(y.Port)
		}
		if x.Config != y.Config {
			return x.Config < y.Config
		}
		if x.Interface != y.Interface {
			return x.Interface < y.Interface
		}
		return x.AltSetting < y.AltSetting
	})
}

// ControlTimeout picks the timeout for a control request: max, or what is
// left of ctx's deadline when that is sooner (fromCtx then). libusb and usbfs
// read a timeout of 0 as "forever", so a deadline less than 1 ms away is treated as
// already passed.
func ControlTimeout(ctx context.Context, max time.Duration, now time.Time) (timeout time.Duration, fromCtx bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return max, false, nil
	}
	left := dl.Sub(now)
	if left >= max {
		return max, false, nil
	}
	if left < time.Millisecond {
		return 0, true, context.DeadlineExceeded
	}
	return left, true, nil
}

// reopenPoll is how often AwaitReenumeration tries again.
const reopenPoll = 200 * time.Millisecond

// AwaitReenumeration is the end of a port reset after which the device
// re-enumerated: it calls open (which finds the device again at info's
// port, with its VID:PID and serial, and claims it) until it succeeds,
// fails for another reason than the device not being there (ErrNotFound,
// ErrNoDevice), ctx is done, or timeout has passed (ErrReenumerationLost).
// Every backend's ResetPort ends so.
func AwaitReenumeration(ctx context.Context, info Info, timeout time.Duration, open func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := open()
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrNoDevice) {
			return err
		}
		if time.Now().After(deadline) {
			return NewError("re-opening after a port reset", info, ErrReenumerationLost,
				fmt.Errorf("not back at port %s within %v: %w", info.PortPath, timeout, ErrNotFound))
		}
		t := time.NewTimer(reopenPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return NewError("waiting for the device to come back after a port reset", info, ctx.Err(), nil)
		case <-t.C:
		}
	}
}
