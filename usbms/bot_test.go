package usbms

import (
	"context"
	"errors"
	"testing"

	"github.com/usbflash/usbflash/scsi"
)

// TestBOTProtocol: a Transport over an Endpoint that is no UASEndpoint
// speaks Bulk-Only, one command in flight, and its batch is its commands
// one after the other, each with its own outcome.
func TestBOTProtocol(t *testing.T) {
	s := &script{t: t, steps: seq(
		cbw, dataAll, passed,
		cbw, dataAll, step{call: "csw", residue: 512},
	)}
	tr := NewTransport(s, TransportOptions{})
	if _, ok := tr.p.(*botTransport); !ok || tr.Protocol() != ProtocolBOT || tr.p.depth() != 1 || tr.p.maxDataPhase() != 0 {
		t.Fatalf("protocol %T %s, depth %d, max data phase %d; want Bulk-Only, 1, none", tr.p, tr.Protocol(), tr.p.depth(), tr.p.maxDataPhase())
	}
	write := func(lba uint32) request {
		cdb := scsi.Write10(lba, 2, false)
		return request{cdb: cdb.Bytes(), dir: DataOut, data: make([]byte, 1024), maxResets: 0}
	}
	errs := tr.p.batch(context.Background(), []request{write(0), write(2)})
	s.done()
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], ErrIncomplete) {
		t.Errorf("batch: %v; want the first passed, the second incomplete", errs)
	}
}
