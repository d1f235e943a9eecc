package fanout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/usbflash/usbflash/internal/testkit/testpattern"
	"github.com/usbflash/usbflash/pipeline/blockdev"

	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

const (
	testTransfer = 64 << 10
	testImage    = 40*testTransfer + 1000 // not a whole number of transfers
)

// card is one simulated reader of a test group, with its backing file.
type card struct {
	path string
	lun  *usbms.LUN
}

func openCard(tb testing.TB, dir, name, opts string) card {
	tb.Helper()
	path := filepath.Join(dir, name+".img")
	spec := "sim:" + path + "?reject-sync=1"
	if !strings.Contains(opts, "size=") {
		spec += "&size=4MiB"
	}
	if opts != "" {
		spec += "&" + opts
	}
	dev, err := sim.Open(spec)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dev.Close() })
	lun, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{Name: name}), 0, usbms.LUNOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return card{path: path, lun: lun}
}

func pattern(n int) []byte { return testpattern.Bytes(n, 7) }

// countingReader counts the bytes the pipeline decoded: one decode for the
// whole group means exactly the image's length.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// TestGroupIsolatesFailures writes one image to healthy readers of
// different speeds and to readers that fail in different ways: the healthy
// cards hold the image and verify, each failed one reports its own error,
// and the image was decoded once.
func TestGroupIsolatesFailures(t *testing.T) {
	for _, lag := range []int{0, 3} {
		t.Run(fmt.Sprintf("lag=%d", lag), func(t *testing.T) {
			dir := t.TempDir()
			specs := []struct {
				name, opts string
				fails      bool
			}{
				{"fast", "", false},
				{"slow", "speed=20MB/s", false},
				{"medium-error", "fault=medium-error:lba=1500,persistent", true},
				{"unplugged", "fault=disconnect:after=1MiB", true},
				{"write-protected", "wp=1", true},
				{"latency", "latency=1ms", false},
			}
			var targets []Target
			var cards []card
			for _, s := range specs {
				c := openCard(t, dir, s.name, s.opts)
				cards = append(cards, c)
				targets = append(targets, Target{Name: s.name, Dev: c.lun})
			}
			g, err := New(targets, Options{Lag: lag, TransferSize: testTransfer})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			img := pattern(testImage)
			src := &countingReader{r: bytes.NewReader(img)}
			ctx := context.Background()
			res, err := pipeline.Write(ctx, g, src, pipeline.WriteOptions{
				TransferSize: testTransfer, ExpectedSize: int64(len(img)), Sync: true})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if src.n != int64(len(img)) {
				t.Errorf("decoded %d bytes for a %d-byte image: want one decode", src.n, len(img))
			}
			for i, r := range g.Results() {
				s := specs[i]
				if (r.Err != nil) != s.fails {
					t.Errorf("%s: err = %v, want failure %v", s.name, r.Err, s.fails)
				}
				if s.fails {
					continue
				}
				if r.Written < int64(len(img)) {
					t.Errorf("%s: wrote %d bytes", s.name, r.Written)
				}
				if _, err := pipeline.VerifyHash(ctx, cards[i].lun, int64(len(img)), res.SHA256, pipeline.VerifyOptions{TransferSize: testTransfer}); err != nil {
					t.Errorf("%s: verify: %v", s.name, err)
				}
				got, err := os.ReadFile(cards[i].path)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:len(img)], img) {
					t.Errorf("%s: card does not hold the image", s.name)
				}
			}
			var de *usbms.CommandError
			if err := g.Results()[2].Err; !errors.As(err, &de) {
				t.Errorf("medium-error card: %v, want the reader's CommandError", err)
			}
			if err := g.Results()[3].Err; !errors.Is(err, usbms.ErrNoDevice) {
				t.Errorf("unplugged card: %v, want ErrNoDevice", err)
			}
		})
	}
}

// TestGroupAllFailed: with no card left the write stops and says why for
// each card.
func TestGroupAllFailed(t *testing.T) {
	dir := t.TempDir()
	a := openCard(t, dir, "a", "wp=1")
	b := openCard(t, dir, "b", "fault=disconnect:after=128KiB")
	g, err := New([]Target{{"a", a.lun}, {"b", b.lun}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	img := pattern(testImage)
	_, err = pipeline.Write(context.Background(), g, bytes.NewReader(img), pipeline.WriteOptions{
		TransferSize: testTransfer, ExpectedSize: int64(len(img)), Sync: true})
	if !errors.Is(err, ErrAllFailed) || !errors.Is(err, usbms.ErrNoDevice) {
		t.Fatalf("err = %v, want ErrAllFailed naming each card's error", err)
	}
}

// gate is a device whose writes wait until the gate opens.
type gate struct {
	open   chan struct{}
	mu     sync.Mutex
	writes int
}

func (d *gate) BlockSize() int                                  { return 512 }
func (d *gate) BlockCount() int64                               { return 1 << 20 }
func (d *gate) ReadBlocks(context.Context, int64, []byte) error { return nil }
func (d *gate) Sync(context.Context) error                      { return nil }
func (d *gate) WriteBlocks(context.Context, int64, []byte) error {
	<-d.open
	d.mu.Lock()
	d.writes++
	d.mu.Unlock()
	return nil
}

// memDev is an instant device that records what it was given.
type memDev struct {
	data []byte
}

func (d *memDev) BlockSize() int    { return 512 }
func (d *memDev) BlockCount() int64 { return int64(len(d.data)) / 512 }
func (d *memDev) ReadBlocks(_ context.Context, lba int64, p []byte) error {
	copy(p, d.data[lba*512:])
	return nil
}
func (d *memDev) Sync(context.Context) error { return nil }
func (d *memDev) WriteBlocks(_ context.Context, lba int64, p []byte) error {
	copy(d.data[lba*512:], p)
	return nil
}

// TestLagLetsOthersRunAhead: a card that does not answer holds the group
// back only once it is Lag transfers behind. In lockstep the first write
// would block here forever, so this test fails (by timeout) without the
// window.
func TestLagLetsOthersRunAhead(t *testing.T) {
	const lag = 4
	stuck := &gate{open: make(chan struct{})}
	fast := &memDev{data: make([]byte, 1<<20)}
	g, err := New([]Target{{"stuck", stuck}, {"fast", fast}}, Options{Lag: lag, TransferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	buf := pattern(4096)
	for i := range lag {
		if err := g.WriteBlocks(context.Background(), int64(i*8), buf); err != nil {
			t.Fatal(err)
		}
	}
	// The stuck card has taken lag transfers; the next write waits for it.
	returned := make(chan struct{})
	go func() {
		g.WriteBlocks(context.Background(), lag*8, buf)
		close(returned)
	}()
	close(stuck.open)
	<-returned
	if err := g.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if stuck.writes != lag+1 {
		t.Errorf("stuck card got %d writes, want %d", stuck.writes, lag+1)
	}
	for i := range lag + 1 {
		if !bytes.Equal(fast.data[i*4096:(i+1)*4096], buf) {
			t.Errorf("fast card: transfer %d missing", i)
		}
	}
}

// allocDev offers device memory and checks every write comes from it.
type allocDev struct {
	memDev
	mem      []byte
	freed    int
	outside  int
	provided bool
}

func (d *allocDev) AllocBuffers(count, size int) ([][]byte, string, func(), error) {
	d.mem = make([]byte, count*size)
	bufs := make([][]byte, count)
	for i := range bufs {
		bufs[i] = d.mem[i*size : (i+1)*size]
	}
	d.provided = true
	return bufs, "test device memory", func() { d.freed++ }, nil
}

func (d *allocDev) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	if len(p) > 0 && !inside(p, d.mem) {
		d.outside++
	}
	return d.memDev.WriteBlocks(ctx, lba, p)
}

func inside(p, mem []byte) bool {
	if len(mem) == 0 {
		return false
	}
	start, end := &mem[0], &mem[len(mem)-1]
	return !ptrLess(&p[0], start) && !ptrLess(end, &p[len(p)-1])
}

// TestLagUsesDeviceMemory: each member's window is the device's own
// memory when it offers some, every write is sent from it, and it is
// given back once on Close.
func TestLagUsesDeviceMemory(t *testing.T) {
	d := &allocDev{memDev: memDev{data: make([]byte, 1<<20)}}
	g, err := New([]Target{{"dma", d}}, Options{Lag: 2, TransferSize: testTransfer})
	if err != nil {
		t.Fatal(err)
	}
	img := pattern(5 * testTransfer)
	if _, err := pipeline.Write(context.Background(), g, bytes.NewReader(img), pipeline.WriteOptions{
		TransferSize: testTransfer, ExpectedSize: int64(len(img)), Sync: true}); err != nil {
		t.Fatal(err)
	}
	g.Close()
	if !d.provided || d.outside != 0 || d.freed != 1 {
		t.Errorf("provided %v, %d writes outside device memory, freed %d times", d.provided, d.outside, d.freed)
	}
	if r := g.Results()[0]; r.Memory != "test device memory" {
		t.Errorf("Memory = %q", r.Memory)
	}
	if !bytes.Equal(d.data[:len(img)], img) {
		t.Error("card does not hold the image")
	}
}

func TestNewRefusesMixedBlockSizes(t *testing.T) {
	dir := t.TempDir()
	a := openCard(t, dir, "a", "")
	b := openCard(t, dir, "b", "block=4096")
	if _, err := New([]Target{{"a", a.lun}, {"b", b.lun}}, Options{}); err == nil {
		t.Fatal("New accepted 512- and 4096-byte cards in one group")
	}
}

func ptrLess(a, b *byte) bool {
	return uintptr(unsafe.Pointer(a)) < uintptr(unsafe.Pointer(b))
}

// TestGroupSmallCardDropsOutAlone: an image whose size is found only by
// writing it outgrows the smaller card, which fails alone with a capacity
// error and its first transfer still zeroed, while the larger card gets
// the whole image.
func TestGroupSmallCardDropsOutAlone(t *testing.T) {
	for _, lag := range []int{0, 4} {
		t.Run(fmt.Sprintf("lag=%d", lag), func(t *testing.T) {
			small := &memDev{data: bytes.Repeat([]byte{0xEE}, 16*testTransfer)}
			large := &memDev{data: make([]byte, 64*testTransfer)}
			g, err := New([]Target{{Name: "small", Dev: small}, {Name: "large", Dev: large}}, Options{Lag: lag, TransferSize: testTransfer})
			if err != nil {
				t.Fatal(err)
			}
			img := pattern(testImage) // 40 transfers: more than the small card holds
			_, err = pipeline.Write(context.Background(), g, bytes.NewReader(img), pipeline.WriteOptions{TransferSize: testTransfer, Sync: true})
			g.Close()
			if err != nil {
				t.Fatalf("Write: %v (the large card holds the image)", err)
			}
			res := g.Results()
			var ce *blockdev.CapacityError
			if !errors.As(res[0].Err, &ce) || ce.Device != "small" || ce.Capacity != int64(len(small.data)) {
				t.Errorf("small card: %v, want a capacity error naming it", res[0].Err)
			}
			if res[1].Err != nil || !bytes.Equal(large.data[:len(img)], img) {
				t.Errorf("large card: %v, holds the image %v", res[1].Err, bytes.Equal(large.data[:len(img)], img))
			}
			if !bytes.Equal(small.data[:testTransfer], make([]byte, testTransfer)) {
				t.Error("the small card's first transfer is not zeroed: it would boot a truncated image")
			}
		})
	}
}

// TestEach: Each runs on every live card after what it was queued (with a
// lag, a stuck card's last transfer is written before its fn), each with
// its own index and device; a card whose fn fails drops out alone.
func TestEach(t *testing.T) {
	for _, lag := range []int{0, 2} {
		t.Run(fmt.Sprintf("lag %d", lag), func(t *testing.T) {
			stuck := &gate{open: make(chan struct{})}
			fast, failing := &memDev{data: make([]byte, 1<<20)}, &memDev{data: make([]byte, 1<<20)}
			g, err := New([]Target{{"stuck", stuck}, {"fast", fast}, {"failing", failing}}, Options{Lag: lag, TransferSize: 4096})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			go close(stuck.open)
			if err := g.WriteBlocks(context.Background(), 8, pattern(4096)); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			seen := map[int]int{} // index -> the card's writes when fn ran
			err = g.Each(context.Background(), func(i int, dev blockdev.Device) (int64, error) {
				mu.Lock()
				defer mu.Unlock()
				switch i {
				case 0:
					stuck.mu.Lock()
					seen[i] = stuck.writes
					stuck.mu.Unlock()
				case 2:
					return 0, errors.New("customising failed")
				default:
					seen[i] = 1
				}
				if err := dev.WriteBlocks(context.Background(), 0, bytes.Repeat([]byte{byte(i + 1)}, 4096)); err != nil {
					return 0, err
				}
				return 4096, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen[0] != 1 || seen[1] != 1 || fast.data[0] != 2 {
				t.Fatalf("Each ran with %v, the fast card's first byte %d", seen, fast.data[0])
			}
			r := g.Results()
			if r[0].Err != nil || r[1].Err != nil || r[2].Err == nil || r[1].Written != 2*4096 {
				t.Fatalf("results %+v", r)
			}
		})
	}
}
