package fanout_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/fanout"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// One image to two cards at once, decoded once: the Group is the device
// pipeline.Write writes. A card that fails (here the second, its lock
// switch on) drops out alone and says why; the others go on.
func Example() {
	ctx := context.Background()
	var targets []fanout.Target
	for i, wp := range []bool{false, true} {
		dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 4096, WriteProtected: wp}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer dev.Close()
		name := fmt.Sprintf("card %d", i+1)
		lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: name}), 0, usbms.LUNOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		targets = append(targets, fanout.Target{Name: name, Dev: lun})
	}
	group, err := fanout.New(targets, fanout.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	image := bytes.Repeat([]byte{0x5A}, 256<<10)
	_, err = pipeline.Write(ctx, group, bytes.NewReader(image), pipeline.WriteOptions{TransferSize: 64 << 10, Sync: true})
	fmt.Println("write:", err)
	// Written counts the first transfer twice: zeroed at the start,
	// written last.
	for _, r := range group.Results() {
		fmt.Println(r.Name, r.Written, errors.Is(r.Err, blockdev.ErrWriteProtected))
	}
	// Output:
	// write: <nil>
	// card 1 327680 false
	// card 2 0 true
}
