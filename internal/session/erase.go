package session

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/lib/splitmix"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/pipeline/blockdev"
)

// Erase is the Blocks of an erase: every block of the card written with
// zeros or a random pattern, at the speed of any write, and read back. A
// card that offers it has every block unmapped first (SCSI UNMAP, or
// WRITE SAME with UNMAP), so that its controller may erase what it holds
// beyond the blocks a host addresses; one that does not is said. What a
// host cannot reach (the controller's spare blocks, wear-levelled out of
// the address space) stays as it was: erase says so, and the docs too.
type Erase struct {
	// Random writes a pattern no card compresses or deduplicates instead
	// of zeros (some controllers do not store zero blocks at all).
	Random bool
	// NoUnmap skips the unmap of every block before the write.
	NoUnmap bool
	seed    uint64
}

// NewErase is an erase's Blocks; a random pattern gets a seed of its own.
func NewErase(random, noUnmap bool) (*Erase, error) {
	e := &Erase{Random: random, NoUnmap: noUnmap}
	if random {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("a seed for the random pattern: %w", err)
		}
		e.seed = binary.LittleEndian.Uint64(b[:])
	}
	return e, nil
}

// What says what an erase writes.
func (e *Erase) What() string {
	if e.Random {
		return "a random pattern"
	}
	return "zeros"
}

// For is every block of the card: zeros, or the pattern.
func (e *Erase) For(_ context.Context, d *drive.Device) (*image.Source, error) {
	return NewBlocksSource(&patternBlocks{size: d.Capacity(), random: e.Random, seed: e.seed})
}

// Prepare unmaps every block of a card that offers it, and says so, or
// that it does not.
func (e *Erase) Prepare(ctx context.Context, d *drive.Device, note func(string)) error {
	if e.NoUnmap {
		return nil
	}
	u, ok := d.Dev.(blockdev.Unmapper)
	how := ""
	if ok {
		var err error
		if how, err = u.UnmapMethod(ctx); err != nil {
			return err
		}
	}
	if how == "" {
		note(fmt.Sprintf("%s offers no unmap (SCSI UNMAP or WRITE SAME with UNMAP): every block is overwritten, and what the card's controller keeps beyond them (spare and worn-out blocks) is out of a host's reach", d.Name))
		return nil
	}
	if err := u.Unmap(ctx, 0, d.Dev.BlockCount()); err != nil {
		if errors.Is(err, blockdev.ErrUnmapRefused) {
			note(fmt.Sprintf("%s refused %s: every block is overwritten all the same", d.Name, how))
			return nil
		}
		return err
	}
	note(fmt.Sprintf("%s: every block unmapped (%s, %s), so its controller may erase them; now every block is overwritten",
		d.Name, how, units.FormatBytes(d.Capacity())))
	return nil
}

// patternBlocks is size bytes of zeros, or of the splitmix64 pattern from
// seed, each 4 KiB block from a seed of its own so that any part can be
// made again from its offset.
type patternBlocks struct {
	size   int64
	random bool
	seed   uint64
}

const patternBlock = 4096

func (p *patternBlocks) Size() int64 { return p.size }

func (p *patternBlocks) ReadAt(b []byte, off int64) (int, error) {
	if off >= p.size {
		return 0, io.EOF
	}
	n := len(b)
	var err error
	if rest := p.size - off; int64(n) > rest {
		n, err = int(rest), io.EOF
	}
	b = b[:n]
	if !p.random {
		clear(b)
		return n, err
	}
	var block [patternBlock]byte
	for i := 0; i < n; {
		at := off + int64(i)
		k := at / patternBlock
		within := int(at % patternBlock)
		seed := p.seed ^ uint64(k)*0x9E3779B97F4A7C15
		if within == 0 && n-i >= patternBlock {
			splitmix.Fill(b[i:i+patternBlock], seed)
			i += patternBlock
			continue
		}
		splitmix.Fill(block[:], seed)
		i += copy(b[i:], block[within:])
	}
	return n, err
}
