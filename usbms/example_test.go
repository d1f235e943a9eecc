package usbms_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// A reader's one slot opened over Bulk-Only Transport, a block written
// and read back. The simulated reader (usbms/sim) stands where a real
// one's Endpoint would (usbms/backend opens those).
func Example() {
	ctx := context.Background()
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 2048}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	tr := usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"})
	lun, err := usbms.OpenLUN(ctx, tr, 0, usbms.LUNOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lun.Transport(), lun.BlockCount(), "blocks of", lun.BlockSize())

	block := bytes.Repeat([]byte("usbms"), 1024)[:lun.BlockSize()]
	if err := lun.WriteBlocks(ctx, 100, block); err != nil {
		fmt.Println(err)
		return
	}
	back := make([]byte, lun.BlockSize())
	if err := lun.ReadBlocks(ctx, 100, back); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(bytes.Equal(back, block))
	// Output:
	// BOT 2048 blocks of 512
	// true
}

// The same over USB Attached SCSI: a reader that offers only UAS, as the
// simulator models one at SuperSpeed with bulk streams. Nothing above the
// Transport changes.
func Example_uas() {
	ctx := context.Background()
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 2048}}, UAS: sim.UASConfig{Mode: sim.UASOnly, Streams: 16}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(lun.Transport())
	fmt.Println(lun.WriteBlocks(ctx, 0, make([]byte, 4*lun.BlockSize())))
	// Output:
	// UAS (16 streams, queue depth 1)
	// <nil>
}

// Errors are told apart with errors.Is and errors.As: a write to a
// write-protected card is blockdev's one refusal, and the command that
// met it names the device, the LUN and the blocks.
func Example_errors() {
	ctx := context.Background()
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 2048, WriteProtected: true}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = lun.WriteBlocks(ctx, 8, make([]byte, 2*lun.BlockSize()))
	var ce *usbms.CommandError
	if errors.Is(err, blockdev.ErrWriteProtected) && errors.As(err, &ce) {
		fmt.Println(ce.Op, ce.Device, ce.LUN, ce.LBA, ce.Blocks)
	}
	// Output:
	// WRITE sim 0 8 2
}

// ChooseTransport is the choice between the two protocols: auto takes
// Bulk-Only where a reader offers both, UAS where it offers only UAS.
func ExampleChooseTransport() {
	both := usbms.Offer{BOT: true, UAS: true, VID: 0x0bda, PID: 0x9210, MaxStreams: 16}
	for _, setting := range []string{usbms.TransportAuto, usbms.TransportUAS, "scsi"} {
		c, err := usbms.ChooseTransport(setting, both)
		fmt.Println(setting, c.UAS, errors.Is(err, usbms.ErrUnknownTransport))
	}
	// Output:
	// auto false false
	// uas true false
	// scsi false true
}
