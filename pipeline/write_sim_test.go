package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// The same pipeline against the simulated USB reader: real CBWs, SCSI
// commands and sense data behind the blockdev.Device seam.

func openSimLUN(t *testing.T, opts string) *usbms.LUN {
	t.Helper()
	dev, err := sim.Open("sim:" + filepath.Join(t.TempDir(), "card.img") + "?" + opts)
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

func TestWriteSimRoundTrip(t *testing.T) {
	for _, size := range []int{1, 3*testTransfer + 100, 40 * testTransfer} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			lun := openSimLUN(t, "size=4MiB&reject-sync=1")
			img := testImage(size, 12)
			ctx := context.Background()
			res, err := Write(ctx, lun, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: -1, Sync: true})
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if _, err := Verify(ctx, lun, bytes.NewReader(img), -1, VerifyOptions{TransferSize: testTransfer}); err != nil {
				t.Errorf("Verify: %v", err)
			}
			if _, err := VerifyHash(ctx, lun, int64(size), res.SHA256, VerifyOptions{TransferSize: testTransfer}); err != nil {
				t.Errorf("VerifyHash: %v", err)
			}
		})
	}
}

func TestWriteSimMediumError(t *testing.T) {
	const bad = 5*testTransfer/testBS + 3
	lun := openSimLUN(t, fmt.Sprintf("size=4MiB&fault=medium-error:lba=%d,persistent", bad))
	img := testImage(20*testTransfer, 13)
	_, err := Write(context.Background(), lun, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, ExpectedSize: int64(len(img))})
	var de *DeviceError
	var ce *usbms.CommandError
	if !errors.As(err, &de) || !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a DeviceError wrapping the reader's CommandError", err)
	}
	if bad < de.LBA || bad >= de.LBA+de.Count {
		t.Errorf("DeviceError covers LBA %d+%d, not the bad block %d", de.LBA, de.Count, bad)
	}
	t.Log(err)
}

// TestWriteSimQueued: through a UAS reader with a queue depth, the write
// and its verify hold (full transfers in flight together), and a medium
// error is reported at the failing command's blocks.
func TestWriteSimQueued(t *testing.T) {
	for _, streams := range []int{0, 16} {
		for _, bad := range []int64{-1, 5*testTransfer/testBS + 3} {
			t.Run(fmt.Sprintf("streams %d, bad %d", streams, bad), func(t *testing.T) {
				opts := fmt.Sprintf("size=4MiB&uas=only&streams=%d", streams)
				if bad >= 0 {
					opts += fmt.Sprintf("&fault=medium-error:lba=%d,persistent", bad)
				}
				dev, err := sim.Open("sim:" + filepath.Join(t.TempDir(), "card.img") + "?" + opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dev.Close() })
				lun, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim", QueueDepth: 4}), 0, usbms.LUNOptions{})
				if err != nil {
					t.Fatal(err)
				}
				img := testImage(20*testTransfer+300, 14)
				ctx := context.Background()
				_, err = Write(ctx, lun, bytes.NewReader(img), WriteOptions{TransferSize: testTransfer, Buffers: 6, ExpectedSize: int64(len(img))})
				if bad >= 0 {
					var de *DeviceError
					if !errors.As(err, &de) || de.LBA > bad || de.LBA+de.Count <= bad || de.Count != testTransfer/testBS {
						t.Fatalf("Write: %v; want a DeviceError for the transfer holding LBA %d", err, bad)
					}
					return
				}
				if err != nil {
					t.Fatalf("Write: %v", err)
				}
				if _, err := Verify(ctx, lun, bytes.NewReader(img), -1, VerifyOptions{TransferSize: testTransfer}); err != nil {
					t.Errorf("Verify: %v", err)
				}
			})
		}
	}
}
