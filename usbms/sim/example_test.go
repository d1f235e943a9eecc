package sim_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// A simulated reader made from the CLI's sim: syntax, whose card is a
// file, driven by usbms as a real reader is; its Stats say what it saw.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "sim-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	dev, err := sim.Open(filepath.Join(dir, "card.img") + "?size=1MiB&serial=EXAMPLE")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	ctx := context.Background()
	lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := lun.WriteBlocks(ctx, 0, make([]byte, 64<<10)); err != nil {
		fmt.Println(err)
		return
	}
	st := dev.Stats()
	fmt.Println(lun.BlockCount(), st.BytesOut, st.Opcodes[0x2A])
	// Output:
	// 2048 65536 1
}

// A fault injected into the reader: a medium error at one block, which
// the host sees as sense data (MEDIUM ERROR) on the command that covers it.
func ExampleDevice_Inject() {
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 2048}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	ctx := context.Background()
	lun, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dev.Inject(sim.Fault{Kind: sim.MediumError, LBA: 100, Persistent: true})
	err = lun.ReadBlocks(ctx, 96, make([]byte, 8*512))
	fmt.Println(usbms.IsMediumError(err))
	fmt.Println(lun.ReadBlocks(ctx, 0, make([]byte, 8*512)))
	// Output:
	// true
	// <nil>
}
