package diskdev

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/usbflash/usbflash/internal/lib/aligned"
	"github.com/usbflash/usbflash/internal/testkit/testtargets"
	"github.com/usbflash/usbflash/pipeline"
)

// openDirect opens path with O_DIRECT, Linux's uncached path, as the
// macOS and Windows opens open their disks uncached, and makes it a
// Device through the same code (newDevice): its block size is the
// kernel's for a block device, 512 for a file.
func openDirect(t *testing.T, path string, maxBytes int64) (*Device, *os.File) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	bs, size := 512, st.Size()
	if st.Mode()&os.ModeDevice != 0 {
		if bs, err = unix.IoctlGetInt(int(f.Fd()), unix.BLKSSZGET); err != nil {
			t.Fatal(err)
		}
		n, err := unix.IoctlGetUint64(int(f.Fd()), unix.BLKGETSIZE64)
		if err != nil {
			t.Fatal(err)
		}
		size = int64(n)
	}
	return newDevice(f, config{name: "disk:" + path, blockSize: bs, blocks: size / int64(bs), maxBytes: maxBytes}), f
}

// TestMisalignedOnTheUncachedPath: the kernel refuses an O_DIRECT
// transfer from a buffer at an odd address (EINVAL), and the device takes
// the same buffer all the same, through an aligned copy, both ways.
func TestMisalignedOnTheUncachedPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	d, f := openDirect(t, path, 0)
	odd := aligned.Bytes(8192 + 1)[1:]
	for i := range odd {
		odd[i] = byte(i%251 + 1)
	}
	if _, err := f.WriteAt(odd, 4096); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("the kernel took a misaligned O_DIRECT write (%v): this test proves nothing here", err)
	}
	ctx := context.Background()
	if err := d.WriteBlocks(ctx, 8, odd); err != nil {
		t.Fatalf("misaligned write through the device: %v", err)
	}
	back := aligned.Bytes(8192 + 3)[3:]
	if err := d.ReadBlocks(ctx, 8, back); err != nil {
		t.Fatalf("misaligned read through the device: %v", err)
	}
	if !bytes.Equal(back, odd) {
		t.Error("read back differs")
	}
}

// failAfter is an image that fails after n bytes, as a damaged download
// does.
type failAfter struct {
	r io.Reader
	n int64
}

var errDamaged = errors.New("the image is damaged here")

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errDamaged
	}
	if int64(len(p)) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= int64(n)
	return n, err
}

// TestWriteOnLoopDevice writes an image through the engine to a loop
// device opened as a disk: target's uncached path is, in transfers the
// device's limit cuts, byte-exact; then an image that fails part way
// leaves the first transfer zeroed (written last, never reached) while
// what came after it was written.
func TestWriteOnLoopDevice(t *testing.T) {
	const transfer = 64 << 10
	dev := testtargets.LoopDevice(t, 4<<20)
	if err := os.WriteFile(dev, bytes.Repeat([]byte{0xff}, 4<<20), 0); err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 5*transfer+1536)
	for i := range img {
		img[i] = byte(i*13 + i>>9)
	}
	ctx := context.Background()

	d, _ := openDirect(t, dev, 16<<10)
	res, err := pipeline.Write(ctx, d, bytes.NewReader(img), pipeline.WriteOptions{TransferSize: transfer, ExpectedSize: int64(len(img)), Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.BytesWritten != int64(len(img)) {
		t.Errorf("wrote %d bytes, want %d", res.BytesWritten, len(img))
	}
	if _, err := pipeline.Verify(ctx, d, bytes.NewReader(img), int64(len(img)), pipeline.VerifyOptions{TransferSize: transfer}); err != nil {
		t.Errorf("verify: %v", err)
	}
	d.Close()
	if got := readDisk(t, dev, len(img)); !bytes.Equal(got, img) {
		t.Fatal("the loop device does not hold the image")
	}

	d, _ = openDirect(t, dev, 0)
	_, err = pipeline.Write(ctx, d, &failAfter{r: bytes.NewReader(img), n: 3 * transfer}, pipeline.WriteOptions{TransferSize: transfer, ExpectedSize: int64(len(img))})
	if !errors.Is(err, errDamaged) {
		t.Fatalf("write of a damaged image = %v", err)
	}
	d.Close()
	got := readDisk(t, dev, 3*transfer)
	if !bytes.Equal(got[:transfer], make([]byte, transfer)) {
		t.Error("the first transfer is not zeroed after a failed write")
	}
	if !bytes.Equal(got[transfer:2*transfer], img[transfer:2*transfer]) {
		t.Error("the second transfer was not written")
	}
}

func readDisk(t *testing.T, dev string, n int) []byte {
	t.Helper()
	f, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatal(err)
	}
	return b
}
