package usbms

import (
	"context"

	"github.com/usbflash/usbflash/scsi"
)

// TestUnitReady sends one TEST UNIT READY and waits for its CSW: the round
// trip of a command that moves no data, which is what every command costs a
// reader before its data moves. Like the probes of OpenLUN it resets at
// most once and never resets the port, so a timing loop over a reader that
// fails it ends quickly instead of climbing the recovery ladder.
func (l *LUN) TestUnitReady(ctx context.Context) error {
	cdb := scsi.TestUnitReady()
	_, err := l.do(ctx, probe(cdb.Bytes(), NoData, nil), span{})
	return err
}
