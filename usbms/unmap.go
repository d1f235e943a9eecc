package usbms

import (
	"context"
	"fmt"

	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/scsi"
)

// unmapSupport is what a LUN's provisioning pages said of unmapping.
type unmapSupport struct {
	method string // "" when it offers none
	max    int64  // blocks per command (0: the default)
}

// The methods UnmapMethod names.
const (
	UnmapByUnmap     = "UNMAP"
	UnmapByWriteSame = "WRITE SAME(16) with UNMAP"
)

// unmapChunk is how many blocks one command unmaps when the device states
// no limit: 2 GiB of 512-byte blocks, so that each command ends well within
// any reader's timeout.
const unmapChunk = 1 << 22

// UnmapMethod says how the LUN unmaps blocks: UNMAP when its logical
// block provisioning page (VPD 0xB2) offers it and its block limits page
// allows it, else WRITE SAME(16) with UNMAP when offered, else "" (most
// card readers). The pages are asked for on the first call, as optional
// commands that a reader may reject (Linux asks a USB disk none at open,
// and neither does usbflash unless the reader's quirks say so); what they
// said is kept.
func (l *LUN) UnmapMethod(ctx context.Context) (string, error) {
	if l.unmap != nil {
		return l.unmap.method, nil
	}
	u, err := l.readProvisioning(ctx)
	if err != nil {
		return "", err
	}
	l.unmap = &u
	return u.method, nil
}

// readProvisioning reads VPD pages 0x00, 0xB0 and 0xB2 of a device that
// claims SPC-2 or later.
func (l *LUN) readProvisioning(ctx context.Context) (unmapSupport, error) {
	if l.inquiry.Version < 4 {
		return unmapSupport{}, nil
	}
	buf := make([]byte, vpdLen)
	page := func(code uint8) ([]byte, bool, error) {
		cdb := scsi.InquiryVPD(code, vpdLen)
		n, err := l.do(ctx, probe(cdb.Bytes(), DataIn, buf), span{})
		if err != nil {
			return nil, false, unignorable(ctx, err)
		}
		return buf[:n], true, nil
	}
	b, ok, err := page(scsi.VPDSupportedPages)
	if !ok {
		return unmapSupport{}, err
	}
	pages, err := scsi.ParseVPDSupportedPages(b)
	if err != nil {
		return unmapSupport{}, nil
	}
	has := map[uint8]bool{}
	for _, p := range pages {
		has[p] = true
	}
	if !has[scsi.VPDProvisioning] {
		return unmapSupport{}, nil
	}
	b, ok, err = page(scsi.VPDProvisioning)
	if !ok {
		return unmapSupport{}, err
	}
	prov, err := scsi.ParseProvisioning(b)
	if err != nil {
		return unmapSupport{}, nil
	}
	var limits scsi.BlockLimits
	if has[scsi.VPDBlockLimits] {
		if b, ok, err = page(scsi.VPDBlockLimits); !ok && err != nil {
			return unmapSupport{}, err
		}
		limits, _ = scsi.ParseBlockLimits(b)
	}
	switch {
	case prov.Unmap && limits.MaxUnmap > 0 && limits.MaxUnmapDescriptors > 0:
		return unmapSupport{method: UnmapByUnmap, max: int64(limits.MaxUnmap)}, nil
	case prov.WriteSame && !l.no16:
		return unmapSupport{method: UnmapByWriteSame}, nil
	}
	return unmapSupport{}, nil
}

// Unmap unmaps blocks blocks from lba, in commands of at most what the
// device allows, by UnmapMethod's method. A command the device refuses
// (ILLEGAL REQUEST: a reader that offers what its card does not take) is
// an error matching blockdev.ErrUnmapRefused.
func (l *LUN) Unmap(ctx context.Context, lba, blocks int64) error {
	method, err := l.UnmapMethod(ctx)
	if err != nil {
		return err
	}
	if method == "" {
		return fmt.Errorf("%w: the device offers neither UNMAP nor WRITE SAME with UNMAP", blockdev.ErrUnmapRefused)
	}
	if lba < 0 || blocks < 0 || lba+blocks > l.blocks {
		return fmt.Errorf("unmap of blocks %d-%d: past the last block, %d", lba, lba+blocks-1, l.blocks-1)
	}
	chunk := int64(unmapChunk)
	if l.unmap.max > 0 {
		chunk = min(chunk, l.unmap.max)
	}
	params := make([]byte, max(scsi.UnmapParamLen, l.blockSize))
	for done := int64(0); done < blocks; {
		n := min(chunk, blocks-done)
		var r request
		if method == UnmapByUnmap {
			cdb := scsi.Unmap(scsi.UnmapParamLen)
			r = l.essential(cdb.Bytes(), DataOut, scsi.UnmapParameters(params, uint64(lba+done), uint32(n)))
		} else {
			cdb := scsi.WriteSame16(uint64(lba+done), uint32(n), true)
			zero := params[:l.blockSize]
			clear(zero)
			r = l.essential(cdb.Bytes(), DataOut, zero)
		}
		if _, err := l.do(ctx, r, span{lba + done, n}); err != nil {
			if scsi.IsIllegalRequest(err) {
				return fmt.Errorf("%w: %w", blockdev.ErrUnmapRefused, err)
			}
			return err
		}
		l.wrote = true
		done += n
	}
	return nil
}
