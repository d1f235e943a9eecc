package usbdev

import (
	"context"
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
