package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// The project's performance claims. Every number is a ratio of runs made in
// the same benchmark, so a noisy machine shifts both sides alike:
//
//	go test ./pipeline/ -run '^$' -bench 'Overlap|TransferSize|Buffers|SteadyState' -benchtime 1x
//
// The speeds are modelled with sleeps; nothing here needs hardware.

// pacedReader produces size bytes of deterministic data at rate bytes/s
// (0: as fast as memory), sleeping per chunk against a deadline so that the
// consumer's own work between reads is absorbed, as it is for a real
// decoder running ahead into a pipe.
type pacedReader struct {
	size, done int64
	rate       float64
	chunk      int
	start      time.Time
	table      []byte
}

func newPacedReader(size int64, rate float64) *pacedReader {
	return &pacedReader{size: size, rate: rate, chunk: 64 << 10, table: testImage(64<<10, 42)}
}

func (r *pacedReader) Read(p []byte) (int, error) {
	if r.done >= r.size {
		return 0, io.EOF
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	n := min(len(p), r.chunk, int(r.size-r.done))
	for i := 0; i < n; {
		i += copy(p[i:n], r.table[int(r.done+int64(i))%len(r.table):])
	}
	r.done += int64(n)
	if r.rate > 0 {
		due := r.start.Add(time.Duration(float64(r.done) / r.rate * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
	}
	return n, nil
}

// sinkDevice accepts writes at a modelled speed and keeps nothing, so large
// images cost no memory.
type sinkDevice struct {
	blocks int64
	speed  speedModel
}

func (d *sinkDevice) BlockSize() int                                  { return 512 }
func (d *sinkDevice) BlockCount() int64                               { return d.blocks }
func (d *sinkDevice) ReadBlocks(context.Context, int64, []byte) error { return nil }
func (d *sinkDevice) Sync(context.Context) error                      { return nil }
func (d *sinkDevice) WriteBlocks(_ context.Context, _ int64, p []byte) error {
	if c := d.speed.cost(len(p)); c > 0 {
		time.Sleep(c)
	}
	return nil
}

// BenchmarkOverlap compares, for a decoder and a device of known speeds:
// the pipeline against the slower of the two alone (overlap: 1.0 is perfect
// overlap), against decoding everything first and then writing
// (x_vs_sequential), and against an io.Pipe handing over 64 KiB at a time,
// each written as its own command, which is what `zcat | dd bs=1M` gets
// (x_vs_pipe64k). The decoder alone, the device alone and the pipeline run
// twice per iteration, interleaved, and the faster run counts: load on the
// machine only ever adds time. busy_frac is measured inside the pipeline's
// own run: the time the bottleneck side was working over the elapsed time.
//
// First-transfer-last costs about two transfers that cannot overlap (the
// wait for the second buffer before streaming starts, and the held first
// transfer written at the end), so on this 48-transfer image overlap is at
// most about 0.96 at equal speeds; on a real image of a few hundred
// transfers or more the cost vanishes.
func BenchmarkOverlap(b *testing.B) {
	const (
		image    = 48 << 20
		transfer = DefaultTransferSize
		latency  = 500 * time.Microsecond
	)
	for _, c := range []struct {
		name     string
		dec, dev float64
	}{
		{"dec40MBps_dev40MBps", 40e6, 40e6},
		{"dec60MBps_dev40MBps", 60e6, 40e6},
		{"dec40MBps_dev60MBps", 40e6, 60e6},
	} {
		b.Run(c.name, func(b *testing.B) {
			dev := &sinkDevice{blocks: 1 << 30, speed: speedModel{Latency: latency, BytesPerSec: c.dev}}
			whole := make([]byte, image) // the sequential way's memory
			var tDec, tDev, tPipe, tSeq, tDD time.Duration
			var busyFrac float64
			pipeline := func() {
				res, err := Write(context.Background(), dev, newPacedReader(image, c.dec),
					WriteOptions{TransferSize: transfer, Buffers: DefaultBuffers, ExpectedSize: image})
				if err != nil {
					b.Fatal(err)
				}
				busyFrac = max(busyFrac, max(res.DecoderBusy, res.DeviceBusy).Seconds()/res.Elapsed.Seconds())
			}
			for range b.N {
				var best [3]time.Duration
				for range 2 {
					for i, run := range []func(){
						func() { decodeAll(b, newPacedReader(image, c.dec), whole) },
						func() { writeAll(b, dev, whole, transfer) },
						pipeline,
					} {
						if d := timed(run); best[i] == 0 || d < best[i] {
							best[i] = d
						}
					}
				}
				tDec, tDev, tPipe = tDec+best[0], tDev+best[1], tPipe+best[2]
				// The baselines are far slower; one run each is enough.
				tSeq += timed(func() {
					decodeAll(b, newPacedReader(image, c.dec), whole)
					writeAll(b, dev, whole, transfer)
				})
				tDD += timed(func() { pipe64k(b, dev, newPacedReader(image, c.dec)) })
			}
			mbps := func(d time.Duration) float64 { return float64(image) * float64(b.N) / d.Seconds() / 1e6 }
			b.ReportMetric(mbps(tPipe), "MB/s")
			b.ReportMetric(mbps(tPipe)/min(mbps(tDec), mbps(tDev)), "overlap")
			b.ReportMetric(busyFrac, "busy_frac")
			b.ReportMetric(tSeq.Seconds()/tPipe.Seconds(), "x_vs_sequential")
			b.ReportMetric(tDD.Seconds()/tPipe.Seconds(), "x_vs_pipe64k")
		})
	}
}

func timed(f func()) time.Duration {
	t := time.Now()
	f()
	return time.Since(t)
}

func decodeAll(b *testing.B, r io.Reader, into []byte) {
	if n, err := readFull(r, into); err != nil || n != len(into) {
		b.Fatalf("decoding: %d bytes, %v", n, err)
	}
}

func writeAll(b *testing.B, dev blockdev.Device, data []byte, transfer int) {
	for off := 0; off < len(data); off += transfer {
		p := data[off:min(off+transfer, len(data))]
		if err := dev.WriteBlocks(context.Background(), int64(off/512), p); err != nil {
			b.Fatal(err)
		}
	}
}

// pipe64k is `zcat | dd`: the decoder writes into a pipe that hands over at
// most 64 KiB at a time, and each hand-off becomes one write command.
func pipe64k(b *testing.B, dev blockdev.Device, src io.Reader) {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.CopyBuffer(pw, src, make([]byte, 64<<10))
		pw.CloseWithError(err)
	}()
	buf := make([]byte, 64<<10)
	var lba int64
	for {
		n, err := pr.Read(buf)
		if n > 0 {
			p := buf[:roundUp(n, 512)]
			if werr := dev.WriteBlocks(context.Background(), lba, p); werr != nil {
				b.Fatal(werr)
			}
			lba += int64(len(p) / 512)
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransferSize writes from memory to a device with 1 ms per
// command and 40 MB/s on the wire, for transfer sizes from 4 KiB to 32 MiB.
// of_link is the end-to-end rate over the wire rate; cmd_of_link the
// device's rate while busy (bytes sent over time inside WriteBlocks), which
// leaves out the fixed costs of the first transfer (the zeroing write, the
// wait for the first buffer). Images are 32 transfers long, from 2 MiB up to
// 64 MiB, so for the largest sizes those fixed costs show as they would
// for a small image.
func BenchmarkTransferSize(b *testing.B) {
	const wire = 40e6
	for _, ts := range []int{4 << 10, 16 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10,
		1 << 20, 4 << 20, 8 << 20, 32 << 20} {
		b.Run(sizeName(ts), func(b *testing.B) {
			image := min(max(int64(ts)*32, 2<<20), 64<<20)
			dev := &sinkDevice{blocks: 1 << 30, speed: speedModel{Latency: time.Millisecond, BytesPerSec: wire}}
			var el, busy time.Duration
			var sent int64
			for range b.N {
				res, err := Write(context.Background(), dev, newPacedReader(image, 0),
					WriteOptions{TransferSize: ts, Buffers: DefaultBuffers, ExpectedSize: image, HashAlg: HashNone})
				if err != nil {
					b.Fatal(err)
				}
				el += res.Elapsed
				busy += res.DeviceBusy
				sent += res.BytesWritten + int64(ts) // the zeroing write
			}
			rate := float64(image) * float64(b.N) / el.Seconds()
			b.ReportMetric(rate/1e6, "MB/s")
			b.ReportMetric(rate/wire, "of_link")
			b.ReportMetric(float64(sent)/busy.Seconds()/wire, "cmd_of_link")
		})
	}
}

// burstyReader is a decoder whose speed swings, as xz or zstd does between
// compressible and incompressible stretches: period bytes at fast, then
// period bytes at slow. Time spent blocked is not made up afterwards, so
// only buffers that let it run ahead in a fast stretch help.
type burstyReader struct {
	size, done int64
	period     int64
	fast, slow float64
	due        time.Time
	table      []byte
}

func (r *burstyReader) Read(p []byte) (int, error) {
	if r.done >= r.size {
		return 0, io.EOF
	}
	// 256 KiB steps keep each sleep long enough to be accurate.
	n := min(len(p), 256<<10, int(r.size-r.done))
	for i := 0; i < n; {
		i += copy(p[i:n], r.table[int(r.done+int64(i))%len(r.table):])
	}
	rate := r.fast
	if (r.done/r.period)%2 == 1 {
		rate = r.slow
	}
	r.done += int64(n)
	r.due = later(r.due, time.Now()).Add(time.Duration(float64(n) / rate * float64(time.Second)))
	time.Sleep(time.Until(r.due))
	return n, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// BenchmarkBuffers writes from a bursty decoder (3 MiB at 100 MB/s, then
// 3 MiB at 25 MB/s: 40 MB/s on average) to a 36 MB/s device, with 2 to 8
// buffers. x_vs_2 is the throughput over that of 2 buffers in the same run;
// each count runs twice and the faster run counts.
func BenchmarkBuffers(b *testing.B) {
	const image = 24 << 20
	dev := &sinkDevice{blocks: 1 << 30, speed: speedModel{Latency: 500 * time.Microsecond, BytesPerSec: 36e6}}
	counts := []int{2, 3, 4, 8}
	el := make([]time.Duration, len(counts))
	for range b.N {
		best := make([]time.Duration, len(counts))
		for range 2 {
			for i, n := range counts {
				src := &burstyReader{size: image, period: 3 << 20, fast: 100e6, slow: 25e6, table: testImage(64<<10, 7)}
				res, err := Write(context.Background(), dev, src,
					WriteOptions{TransferSize: DefaultTransferSize, Buffers: n, ExpectedSize: image, HashAlg: HashNone})
				if err != nil {
					b.Fatal(err)
				}
				if best[i] == 0 || res.Elapsed < best[i] {
					best[i] = res.Elapsed
				}
			}
		}
		for i := range el {
			el[i] += best[i]
		}
	}
	for i, n := range counts {
		b.ReportMetric(float64(image)*float64(b.N)/el[i].Seconds()/1e6, fmt.Sprintf("MB/s_%dbuf", n))
		b.ReportMetric(el[0].Seconds()/el[i].Seconds(), fmt.Sprintf("x_vs_2_%dbuf", n))
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkSteadyStateAllocs passes buffers through the ring to an instant
// device. allocs/op covers one whole Write of 256 buffers (setup included);
// allocs/buffer is the difference between a long and a short write divided
// by the extra buffers: the per-buffer cost, which must be 0.
func BenchmarkSteadyStateAllocs(b *testing.B) {
	const ts = 64 << 10
	b.ReportAllocs()
	for range b.N {
		writeBuffers(b, 256, ts)
	}
	b.StopTimer()
	b.ReportMetric(allocsPerBuffer(b, ts, writeBuffers), "allocs/buffer")
}

func writeBuffers(tb testing.TB, n int, ts int) {
	dev := &sinkDevice{blocks: int64(n) * int64(ts) / 512}
	if _, err := Write(context.Background(), dev, newPacedReader(int64(n)*int64(ts), 0),
		WriteOptions{TransferSize: ts, Buffers: 2, ExpectedSize: -1}); err != nil {
		tb.Fatal(err)
	}
}

// readBuffers reads n buffers back through VerifyHash. The hash cannot
// match (the sink reads nothing), so the run ends in a VerifyError.
func readBuffers(tb testing.TB, n int, ts int) {
	dev := &sinkDevice{blocks: int64(n) * int64(ts) / 512}
	var ve *VerifyError
	if _, err := VerifyHash(context.Background(), dev, int64(n)*int64(ts), [32]byte{1}, VerifyOptions{TransferSize: ts}); !errors.As(err, &ve) {
		tb.Fatal(err)
	}
}

// allocsPerBuffer is the allocations run makes per buffer beyond a short
// run's: a long run of 1024 more buffers against a short one.
func allocsPerBuffer(tb testing.TB, ts int, run func(tb testing.TB, n, ts int)) float64 {
	mallocs := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		run(tb, n, ts)
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	mallocs(32) // warm up: first-use allocations of the runtime and timers
	short, long := mallocs(32), mallocs(32+1024)
	return (float64(long) - float64(short)) / 1024
}

// patternDevice reads back what pacedReader produces, at memory speed and
// without holding it: byte o is table[o % len(table)]. Writes are dropped.
type patternDevice struct {
	blocks int64
	table  []byte
}

func newPatternDevice(size int64) *patternDevice {
	return &patternDevice{blocks: size / 512, table: newPacedReader(0, 0).table}
}

func (d *patternDevice) BlockSize() int                                   { return 512 }
func (d *patternDevice) BlockCount() int64                                { return d.blocks }
func (d *patternDevice) Sync(context.Context) error                       { return nil }
func (d *patternDevice) WriteBlocks(context.Context, int64, []byte) error { return nil }
func (d *patternDevice) ReadBlocks(_ context.Context, lba int64, p []byte) error {
	off := lba * 512
	for i := 0; i < len(p); {
		i += copy(p[i:], d.table[(off+int64(i))%int64(len(d.table)):])
	}
	return nil
}

// BenchmarkVerify compares the read-back of a 64 MiB image checked by
// SHA-256 (VerifyHash) and by per-transfer digests (VerifyDigests) with a
// bare read that checks nothing, on a device as fast as memory: the cost
// of the check alone. sha256/xxh3 is how many times longer the SHA-256
// verify takes; xxh3/read what the digests add to reading (1.0: nothing).
//
//	go test -run '^$' -bench 'Verify' -count 3 ./pipeline/
func BenchmarkVerify(b *testing.B) {
	const size = 64 << 20
	ctx := context.Background()
	dev := newPatternDevice(size)
	res, err := Write(ctx, dev, newPacedReader(size, 0), WriteOptions{ExpectedSize: size, Digests: true, HashAlg: HashSHA256})
	if err != nil {
		b.Fatal(err)
	}
	opts := VerifyOptions{}
	bare := opts
	if err := bare.normalize(dev); err != nil { // readBack takes normalized options
		b.Fatal(err)
	}
	var tRead, tSHA, tXXH time.Duration
	b.ResetTimer()
	for range b.N {
		tRead += timed(func() {
			if _, err := readBack(ctx, dev, size, size, bare, func(f fill, got []byte) (int, bool, error) {
				return len(got), f.err == nil, nilIfEOF(f.err)
			}); err != nil {
				b.Fatal(err)
			}
		})
		tSHA += timed(func() {
			if _, err := VerifyHash(ctx, dev, size, res.SHA256, opts); err != nil {
				b.Fatal(err)
			}
		})
		tXXH += timed(func() {
			if _, err := VerifyDigests(ctx, dev, res.Digests, opts); err != nil {
				b.Fatal(err)
			}
		})
	}
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
	b.ReportMetric(tSHA.Seconds()/tXXH.Seconds(), "sha256/xxh3")
	b.ReportMetric(tXXH.Seconds()/tRead.Seconds(), "xxh3/read")
	b.ReportMetric(mbps(tRead), "read_MB/s")
	b.ReportMetric(mbps(tSHA), "sha256_MB/s")
	b.ReportMetric(mbps(tXXH), "xxh3_MB/s")
}

// BenchmarkVerifyWrite is the write side of the same choice: the CPU a
// 64 MiB write costs the process with no hash, with the decoded image's
// SHA-256, and with per-transfer digests, to a device that drops what it
// gets. The decoder is a memory copy, so the difference is the hash.
func BenchmarkVerifyWrite(b *testing.B) {
	const size = 64 << 20
	ctx := context.Background()
	variants := []struct {
		name string
		opts WriteOptions
	}{
		{"none", WriteOptions{HashAlg: HashNone}},
		{"sha256", WriteOptions{HashAlg: HashSHA256}},
		{"xxh3", WriteOptions{HashAlg: HashNone, Digests: true}},
	}
	cpu := make([]time.Duration, len(variants))
	b.ResetTimer()
	for range b.N {
		for i, v := range variants {
			v.opts.ExpectedSize = size
			res, err := Write(ctx, &sinkDevice{blocks: size / 512}, newPacedReader(size, 0), v.opts)
			if err != nil {
				b.Fatal(err)
			}
			cpu[i] += res.DecoderBusy
		}
	}
	perGiB := func(d time.Duration) float64 { return d.Seconds() / float64(b.N) / (float64(size) / (1 << 30)) }
	for i, v := range variants {
		b.ReportMetric(perGiB(cpu[i]), v.name+"_decoder_s/GiB")
	}
	b.ReportMetric(cpu[1].Seconds()/cpu[2].Seconds(), "sha256/xxh3")
}
