package scsi_test

import (
	"fmt"

	"github.com/usbflash/usbflash/scsi"
)

// A READ(10) of 8 blocks at LBA 2048, as a transport sends it; the CDB is a
// value, so building one per command allocates nothing.
func ExampleRead10() {
	cdb := scsi.Read10(2048, 8)
	fmt.Println(cdb.Name())
	fmt.Printf("% x\n", cdb.Bytes())
	// Output:
	// READ(10)
	// 28 00 00 00 08 00 00 00 08 00
}

// Fixed-format sense data of an empty slot (NOT READY, MEDIUM NOT
// PRESENT), decoded into the error a failed command returns, and what a
// transport does about it.
func ExampleParseSense() {
	sense := make([]byte, 18)
	sense[0], sense[2], sense[7], sense[12], sense[13] = 0x70, 0x02, 10, 0x3A, 0x00
	se, err := scsi.ParseSense(sense)
	if err != nil {
		fmt.Println(err)
		return
	}
	failed := fmt.Errorf("TEST UNIT READY: %w", se)
	fmt.Printf("%v %02X/%02X\n", se.Key, se.ASC, se.ASCQ)
	fmt.Println(scsi.IsNoMedium(failed), se.Action())
	if got, ok := scsi.AsSense(failed); ok {
		fmt.Println(got) // the sense, found through any wrapping
	}
	// Output:
	// NOT READY 3A/00
	// true fail
	// no medium present (sense 2/3A/00)
}
