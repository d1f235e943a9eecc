package sim

import (
	"encoding/binary"
	"os"
)

// simMaxUnmap is the most blocks one UNMAP may name (VPD 0xB0): 512 MiB of
// 512-byte blocks, so that a card is unmapped in several commands.
const simMaxUnmap = 1 << 20

// unmap plans UNMAP and WRITE SAME(16): their data-out (a parameter list,
// one block) is collected, then the blocks they name are unmapped (read
// as zeros from then on) or, for a WRITE SAME without UNMAP, written.
func (d *Device) unmap(l *lun, cdb []byte) plan {
	if l.cfg.Unmap == "" || cdb[0] == opUnmap && l.cfg.Unmap == "writesame" || l.cfg.Unmap == "refuse" {
		return failed(l, senseInvalidOpcode())
	}
	if !l.present() {
		return failed(l, senseNoMedium())
	}
	if l.cfg.WriteProtected {
		return failed(l, senseWriteProtected())
	}
	bs := l.blockSize
	if cdb[0] == opUnmap {
		n := int64(binary.BigEndian.Uint16(cdb[7:9]))
		return plan{dir: dirOut, n: n, good: n, params: make([]byte, n), then: func(p []byte) *sense {
			if len(p) < 8 {
				s := senseInvalidField()
				return &s
			}
			descs := p[8:min(len(p), 8+int(binary.BigEndian.Uint16(p[2:4])))]
			for ; len(descs) >= 16; descs = descs[16:] {
				lba, count := binary.BigEndian.Uint64(descs[0:8]), uint64(binary.BigEndian.Uint32(descs[8:12]))
				if s := zeroBlocks(l, lba, count, nil); s != nil {
					return s
				}
			}
			return nil
		}}
	}
	lba, count := binary.BigEndian.Uint64(cdb[2:10]), uint64(binary.BigEndian.Uint32(cdb[10:14]))
	withUnmap := cdb[1]&0x08 != 0
	return plan{dir: dirOut, n: bs, good: bs, params: make([]byte, bs), then: func(p []byte) *sense {
		if withUnmap && allZero(p) {
			return zeroBlocks(l, lba, count, nil)
		}
		return zeroBlocks(l, lba, count, p)
	}}
}

// zeroBlocks writes block (zeros when nil) over count blocks from lba.
func zeroBlocks(l *lun, lba, count uint64, block []byte) *sense {
	if lba > uint64(l.cfg.Blocks) || count > uint64(l.cfg.Blocks)-lba {
		s := senseLBAOutOfRange()
		return &s
	}
	bs := l.blockSize
	if block == nil {
		switch m := l.medium.(type) {
		case *Memory:
			m.discard(int64(lba)*bs, int64(count)*bs)
			return nil
		case *os.File:
			if punchHole(m, int64(lba)*bs, int64(count)*bs) {
				return nil // a card's file keeps no zeros it need not
			}
		}
	}
	chunk := make([]byte, 1<<20)
	if block != nil {
		for i := 0; i < len(chunk); i += int(bs) {
			copy(chunk[i:], block)
		}
	}
	for off, end := int64(lba)*bs, int64(lba+count)*bs; off < end; off += int64(len(chunk)) {
		n := min(int64(len(chunk)), end-off)
		if _, err := l.medium.WriteAt(chunk[:n], off); err != nil {
			s := senseWriteError(off / bs)
			return &s
		}
	}
	return nil
}

func allZero(p []byte) bool {
	for _, c := range p {
		if c != 0 {
			return false
		}
	}
	return true
}
