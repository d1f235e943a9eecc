package pipeline

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// protectedDevice is a device with a lock switch.
type protectedDevice struct {
	*memDevice
	wp bool
}

func (d *protectedDevice) WriteProtected() bool { return d.wp }

func TestWriteProtected(t *testing.T) {
	for _, wp := range []bool{true, false} {
		d := &protectedDevice{memDevice: newTestDevice(t, 64, testBS, oldByte).(*memDevice), wp: wp}
		_, err := Write(context.Background(), d, bytes.NewReader(testImage(3*testTransfer, 1)), WriteOptions{TransferSize: testTransfer})
		if got := errors.Is(err, blockdev.ErrWriteProtected); got != wp {
			t.Fatalf("write-protected %v: err = %v", wp, err)
		}
		if wp && (err.Error() != "mem is write-protected; nothing was written" || bytes.Count(d.data, []byte{oldByte}) != len(d.data)) {
			t.Errorf("err %v: the medium was written or the device not named", err)
		}
	}
}

// limitedDevice takes at most limit blocks per command.
type limitedDevice struct {
	recordingDevice
	limit int64
}

func (d *limitedDevice) MaxTransfer() int64 { return d.limit }

func TestTransferLimit(t *testing.T) {
	for _, tc := range []struct {
		limit    int64
		transfer int // asked for
		want     int // blocks per command
	}{
		{4, testTransfer, 4},
		{0, testTransfer, testTransfer / testBS},    // no limit known
		{1000, testTransfer, testTransfer / testBS}, // above what is asked
		{7, 0, 7}, // the default, lowered
	} {
		d := &limitedDevice{recordingDevice: recordingDevice{Device: newTestDevice(t, 4096, testBS, oldByte)}, limit: tc.limit}
		img := testImage(5*testTransfer+100, 2)
		if _, err := Write(context.Background(), d, bytes.NewReader(img), WriteOptions{TransferSize: tc.transfer, ExpectedSize: int64(len(img))}); err != nil {
			t.Fatal(err)
		}
		most := 0
		for _, w := range d.writes {
			most = max(most, w.blocks)
		}
		if most != tc.want {
			t.Errorf("limit %d, transfer %d: commands of up to %d blocks, want %d", tc.limit, tc.transfer, most, tc.want)
		}
		if !bytes.Equal(devContents(t, d)[:len(img)], img) {
			t.Errorf("limit %d: the image was not written", tc.limit)
		}
	}
}

// TestDeviceName: the name in the options wins over the device's own, and
// a device without either is still named.
func TestDeviceName(t *testing.T) {
	fault := func(dev blockdev.Device) blockdev.Device { return &readFaultDevice{Device: dev, bad: 0} }
	for _, tc := range []struct {
		dev  blockdev.Device
		name string
		want string
	}{
		{newTestDevice(t, 64, testBS, oldByte), "", "mem"},
		{newTestDevice(t, 64, testBS, oldByte), "usb:1234:5678/0", "usb:1234:5678/0"},
		{fault(newTestDevice(t, 64, testBS, oldByte)), "", "the device"},
	} {
		_, err := VerifyHash(context.Background(), tc.dev, 64*testBS+1, [32]byte{}, VerifyOptions{Name: tc.name})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want it to name %q", err, tc.want)
		}
	}
}
