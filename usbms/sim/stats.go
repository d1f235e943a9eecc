package sim

import (
	"maps"
	"time"
)

// Stats counts what the device saw, for tests and benchmarks.
type Stats struct {
	Commands                    int64 // well-formed CBWs accepted
	BadCBWs                     int64 // CBWs rejected as invalid or not meaningful
	BytesOut                    int64 // data-phase bytes received (CBWs not counted)
	BytesIn                     int64 // data-phase bytes sent (CSWs not counted)
	BOTResets                   int64 // Bulk-Only Mass Storage Resets
	ClearHaltsIn, ClearHaltsOut int64
	PortResets                  int64
	Stalls                      int64 // times an endpoint was halted
	Chokes                      int64 // READs and WRITEs refused for their size (Misbehaviour.ChokeBlocks)
	LostCBWs                    int64 // CBWs lost while the device was still resetting (Misbehaviour.ResetSettle)
	UASAborts                   int64 // ABORT TASK functions received
	UASLUResets                 int64 // LOGICAL UNIT RESET functions received
	// ModelTime is the modelled clock: every command's latency, the data
	// time of every transfer at the modelled speed, the card's page and
	// erase-unit costs, the time the host waited for answers that never
	// came, and the pauses the host made through Sleep. It is what a run
	// costs on this reader, whatever else kept the host busy.
	ModelTime time.Duration
	// Opcodes counts commands by CDB operation code.
	Opcodes map[byte]int64
	// LUNs has per-LUN block counts.
	LUNs []LUNStats
}

// LUNStats counts the blocks a LUN moved.
type LUNStats struct {
	BlocksRead, BlocksWritten int64
	// WrittenFirst and WrittenEnd bound every block written: [First, End).
	// Both are 0 when nothing was written.
	WrittenFirst, WrittenEnd int64
}

// Stats returns a snapshot.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.Opcodes = maps.Clone(d.stats.Opcodes)
	s.LUNs = append([]LUNStats(nil), d.stats.LUNs...)
	return s
}

// countWrite records blocks written on a LUN.
func (s *LUNStats) countWrite(lba, blocks int64) {
	if blocks <= 0 {
		return
	}
	if s.BlocksWritten == 0 {
		s.WrittenFirst, s.WrittenEnd = lba, lba+blocks
	} else {
		s.WrittenFirst = min(s.WrittenFirst, lba)
		s.WrittenEnd = max(s.WrittenEnd, lba+blocks)
	}
	s.BlocksWritten += blocks
}
