package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"runtime"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// TestCPUTime: the results count the CPU the process spent. Hashing 16 MiB
// takes milliseconds of CPU on any machine, far above the clock's
// resolution. Where the OS gives no CPU time (the !unix stub) both are 0.
func TestCPUTime(t *testing.T) {
	img := testImage(16<<20, 5)
	dev := newTestDevice(t, int64(len(img))/testBS, testBS, oldByte)
	ctx := context.Background()
	res, err := Write(ctx, dev, bytes.NewReader(img), WriteOptions{ExpectedSize: int64(len(img))})
	if err != nil {
		t.Fatal(err)
	}
	v, err := VerifyHash(ctx, dev, int64(len(img)), sha256.Sum256(img), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counted := res.CPU > 0 && v.CPU > 0
	switch runtime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		counted = !counted && res.CPU == 0 && v.CPU == 0
	}
	if !counted {
		t.Errorf("CPU: write %v, verify %v; want both above zero (zero without the OS's count)", res.CPU, v.CPU)
	}
}

// countingDevice is a device that counts its commands as a backend would
// (blockdev.IOCounter), from a count it had before the write began.
type countingDevice struct {
	blockdev.Device
	c blockdev.IOCounts
}

func (d *countingDevice) WriteBlocks(ctx context.Context, lba int64, p []byte) error {
	d.c.Commands++
	d.c.Submits += 2
	return d.Device.WriteBlocks(ctx, lba, p)
}

func (d *countingDevice) ReadBlocks(ctx context.Context, lba int64, p []byte) error {
	d.c.Commands++
	d.c.Reaps++
	return d.Device.ReadBlocks(ctx, lba, p)
}

func (d *countingDevice) IOCounts() blockdev.IOCounts { return d.c }

// TestPhaseIOCounts: a write's and a read-back's results carry what the
// device counted during that phase alone, whatever it had counted before.
func TestPhaseIOCounts(t *testing.T) {
	img := testImage(8*testTransfer+100, 3)
	dev := &countingDevice{Device: newTestDevice(t, int64(len(img))/testBS+1, testBS, oldByte), c: blockdev.IOCounts{Commands: 7, Submits: 70}}
	ctx := context.Background()
	res, err := Write(ctx, dev, bytes.NewReader(img), WriteOptions{ExpectedSize: int64(len(img)), TransferSize: testTransfer, Digests: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := (blockdev.IOCounts{Commands: int64(res.Transfers), Submits: 2 * int64(res.Transfers)}); res.IO != want {
		t.Errorf("write's IO %+v, want %+v (its %d WRITEs)", res.IO, want, res.Transfers)
	}
	v, err := VerifyDigests(ctx, dev, res.Digests, VerifyOptions{TransferSize: testTransfer})
	if err != nil {
		t.Fatal(err)
	}
	if want := (blockdev.IOCounts{Commands: int64(v.Reads), Reaps: int64(v.Reads)}); v.IO != want {
		t.Errorf("read-back's IO %+v, want %+v (its %d READs)", v.IO, want, v.Reads)
	}
	if res.Usage.CPU() != res.CPU || v.Usage.CPU() != v.CPU {
		t.Errorf("CPU %v and %v, usage %+v and %+v: one reading, two answers", res.CPU, v.CPU, res.Usage, v.Usage)
	}
}
