package cardbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// RandomSize is the transfer of the random test: what SD A1/A2 classes
// promise a number of per second.
const RandomSize = 4 << 10

// RandomResult is a run of random transfers.
type RandomResult struct {
	Op       string
	Size     int64
	Region   Region
	Commands int
	Elapsed  time.Duration
}

// PerSecond is the number of transfers per second (IOPS).
func (r RandomResult) PerSecond() float64 { return rate(int64(r.Commands), r.Elapsed) }

// Random issues transfers of size bytes at random size-aligned offsets of
// region for d (at least one transfer), reading, or writing pseudo-random
// data. Writes are synced inside the time.
func Random(ctx context.Context, dev blockdev.Device, op string, region Region, size int64, d time.Duration, seed uint64) (RandomResult, error) {
	bs := int64(dev.BlockSize())
	size = max(size/bs, 1) * bs
	slots := region.Length / size
	res := RandomResult{Op: op, Size: size, Region: region}
	if slots <= 0 {
		return res, fmt.Errorf("random %s: region %s of %d bytes holds no %d-byte transfer", op, region.Name, region.Length, size)
	}
	buf := aligned.Bytes(int(size))
	if op == OpWrite {
		fillRandom(buf, seed)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	first := (region.Offset + size - 1) / size * size // aligned to the transfer
	slots = (region.End() - first) / size
	start := time.Now()
	for {
		off := first + rng.Int64N(slots)*size
		var err error
		if op == OpWrite {
			err = dev.WriteBlocks(ctx, off/bs, buf)
		} else {
			err = dev.ReadBlocks(ctx, off/bs, buf)
		}
		if err != nil {
			return res, fmt.Errorf("random %s of %d bytes at byte %d: %w", op, size, off, err)
		}
		res.Commands++
		if time.Since(start) >= d {
			break
		}
	}
	if op == OpWrite {
		if err := dev.Sync(ctx); err != nil {
			return res, fmt.Errorf("random write: sync: %w", err)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// RoundTripper sends a command that moves no data (TEST UNIT READY).
type RoundTripper interface {
	TestUnitReady(ctx context.Context) error
}

// RoundTrip is the time one data-less command takes, over many.
type RoundTrip struct {
	Commands int
	Min      time.Duration
	Median   time.Duration
	Max      time.Duration
}

// MeasureRoundTrip times TEST UNIT READY until d has passed or n commands
// were sent, whichever is first (at least one).
func MeasureRoundTrip(ctx context.Context, rt RoundTripper, n int, d time.Duration) (RoundTrip, error) {
	var times []time.Duration
	start := time.Now()
	for len(times) < max(n, 1) {
		t0 := time.Now()
		if err := rt.TestUnitReady(ctx); err != nil {
			return RoundTrip{}, fmt.Errorf("TEST UNIT READY %d: %w", len(times)+1, err)
		}
		times = append(times, time.Since(t0))
		if time.Since(start) >= d {
			break
		}
	}
	slices.Sort(times)
	return RoundTrip{Commands: len(times), Min: times[0], Median: times[len(times)/2], Max: times[len(times)-1]}, nil
}
