package blockdev_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/internal/testkit/readonly"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
	"github.com/usbflash/usbflash/scsi"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// TestOneWriteProtectedError: every way a medium is found to refuse
// writes, by any layer, is errors.Is(err, blockdev.ErrWriteProtected).
func TestOneWriteProtectedError(t *testing.T) {
	ctx := context.Background()
	block := make([]byte, 512)
	tests := []struct {
		name string
		err  func(t *testing.T) error
		// sense: the SCSI sense data must still be found in the error.
		sense bool
	}{
		{name: "sim wp=1: the WP bit seen at open, before writing", err: func(t *testing.T) error {
			return blockdev.CheckWritable(simLUN(t, "wp=1"), "sim:card")
		}},
		{name: "sim wp=1: a write the LUN refuses itself", err: func(t *testing.T) error {
			return simLUN(t, "wp=1").WriteBlocks(ctx, 0, block)
		}},
		{name: "sim wp=1 without MODE SENSE: DATA PROTECT on the WRITE", sense: true, err: func(t *testing.T) error {
			lun := simLUN(t, "wp=1&reject-modesense=1")
			if lun.WriteProtected() {
				t.Fatal("the LUN knew of the protection before writing")
			}
			return lun.WriteBlocks(ctx, 0, block)
		}},
		{name: "sim wp=1 without MODE SENSE: through the engine", sense: true, err: func(t *testing.T) error {
			_, err := pipeline.Write(ctx, simLUN(t, "wp=1&reject-modesense=1"), bytes.NewReader(make([]byte, 64<<10)), pipeline.WriteOptions{TransferSize: 16 << 10})
			if !errors.As(err, new(*pipeline.DeviceError)) {
				t.Errorf("err = %v, want a *pipeline.DeviceError", err)
			}
			return err
		}},
		{name: "file: a read-only file, before writing", err: func(t *testing.T) error {
			return blockdev.CheckWritable(readOnlyFile(t), "")
		}},
		{name: "file: a read-only file, a write", err: func(t *testing.T) error {
			return readOnlyFile(t).WriteBlocks(ctx, 0, block)
		}},
		{name: "file: a write the kernel refuses after opening", err: func(t *testing.T) error {
			if os.Geteuid() != 0 {
				t.Skip("a file's mode does not stop a descriptor opened for writing; only root can make it immutable")
			}
			path := filepath.Join(t.TempDir(), "card.img")
			dev, err := filedev.Open(path, filedev.Options{Size: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { dev.Close() })
			readonly.File(t, path)
			return dev.WriteBlocks(ctx, 0, block)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if !errors.Is(err, blockdev.ErrWriteProtected) {
				t.Fatalf("err = %v, want errors.Is(err, blockdev.ErrWriteProtected)", err)
			}
			if se, ok := scsi.AsSense(err); tc.sense && (!ok || se.Key != scsi.DataProtect) {
				t.Errorf("err = %v: the DATA PROTECT sense is lost", err)
			}
			t.Log(err)
		})
	}
}

// simLUN opens LUN 0 of a simulated 1 MiB card with the options opts.
func simLUN(t *testing.T, opts string) *usbms.LUN {
	t.Helper()
	dev, err := sim.Open("sim:" + filepath.Join(t.TempDir(), "card.img") + "?size=1MiB&" + opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	lun, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lun
}

// readOnlyFile opens a file target the process may read but not write.
func readOnlyFile(t *testing.T) *filedev.Device {
	t.Helper()
	path := filepath.Join(t.TempDir(), "card.img")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	readonly.File(t, path)
	dev, err := filedev.Open(path, filedev.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

func TestMarkWriteProtected(t *testing.T) {
	base := &os.PathError{Op: "write", Path: "x", Err: errors.New("read-only file system")}
	err := blockdev.MarkWriteProtected(base)
	var pe *os.PathError
	if !errors.Is(err, blockdev.ErrWriteProtected) || !errors.As(err, &pe) || err.Error() != base.Error() {
		t.Errorf("err = %v: want the sentinel, the original error and its text", err)
	}
	if blockdev.MarkWriteProtected(nil) != nil {
		t.Error("MarkWriteProtected(nil) != nil")
	}
}

func TestName(t *testing.T) {
	var d named
	if got := blockdev.Name(d, "usb:1234:5678"); got != "usb:1234:5678" {
		t.Errorf("Name with a name = %q", got)
	}
	if got := blockdev.Name(d, ""); got != "card" {
		t.Errorf("Name of a Stringer = %q", got)
	}
	if got := blockdev.Name(unnamed{}, ""); got != "the device" {
		t.Errorf("Name of a device without a name = %q", got)
	}
	if got := blockdev.Capacity(d); got != 8*4096 {
		t.Errorf("Capacity = %d", got)
	}
}

type unnamed struct{}

func (unnamed) BlockSize() int                                   { return 4096 }
func (unnamed) BlockCount() int64                                { return 8 }
func (unnamed) ReadBlocks(context.Context, int64, []byte) error  { return nil }
func (unnamed) WriteBlocks(context.Context, int64, []byte) error { return nil }
func (unnamed) Sync(context.Context) error                       { return nil }

type named struct{ unnamed }

func (named) String() string { return "card" }
