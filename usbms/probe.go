package usbms

import (
	"context"
	"errors"
	"fmt"

	"github.com/usbflash/usbflash/scsi"
)

// LUNSummary is what probing found in one slot of a reader.
type LUNSummary struct {
	Number int
	// LUN is the opened logical unit, ready for block I/O; nil when it
	// could not be opened (Err says why).
	LUN *LUN
	// Inquiry is the LUN's identity: from LUN when it opened, else from a
	// bare INQUIRY, which an empty slot still answers (HasInquiry).
	Inquiry    scsi.InquiryData
	HasInquiry bool
	// NoMedium: the slot is empty (sense 2/3A/00).
	NoMedium bool
	Err      error
}

// ProbeLUNs asks every LUN of the reader behind t what it holds: it opens
// each LUN, and describes the ones that cannot be opened (an empty slot,
// a card that does not answer) by INQUIRY alone. Only Get Max LUN failing
// is an error; a LUN's failure is in its summary.
func ProbeLUNs(ctx context.Context, t *Transport, opts LUNOptions) ([]LUNSummary, error) {
	maxLUN, err := t.MaxLUN(ctx)
	if err != nil {
		return nil, fmt.Errorf("usbms: asking %s for its number of LUNs: %w", t.opts.Name, err)
	}
	out := make([]LUNSummary, 0, maxLUN+1)
	for n := 0; n <= maxLUN; n++ {
		s := ProbeLUN(ctx, t, n, opts)
		if errors.Is(s.Err, ErrNoDevice) || ctx.Err() != nil {
			return nil, s.Err
		}
		out = append(out, s)
	}
	return out, nil
}

// ProbeLUN opens LUN n of the reader behind t, and when that fails says
// why and what INQUIRY still tells of it.
func ProbeLUN(ctx context.Context, t *Transport, n int, opts LUNOptions) LUNSummary {
	s := LUNSummary{Number: n}
	lun, err := OpenLUN(ctx, t, n, opts)
	if err == nil {
		s.LUN, s.Inquiry, s.HasInquiry = lun, lun.Inquiry(), true
		return s
	}
	s.Err, s.NoMedium = err, scsi.IsNoMedium(err)
	if errors.Is(err, ErrNoDevice) || ctx.Err() != nil {
		return s
	}
	buf := make([]byte, inquiryLen)
	cdb := scsi.Inquiry(inquiryLen)
	r := probe(cdb.Bytes(), DataIn, buf)
	r.lun = n
	if k, ierr := t.exec(ctx, r); ierr == nil {
		if inq, perr := scsi.ParseInquiry(buf[:k]); perr == nil {
			s.Inquiry, s.HasInquiry = inq, true
		}
	}
	return s
}
