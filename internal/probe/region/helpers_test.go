package region

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/usbflash/usbflash/internal/lib/splitmix"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// cardSize is the simulated card's size.
const cardSize = 16 << 20

// simCard is a simulated reader with a card of known content.
type simCard struct {
	lun *usbms.LUN
	mem *sim.Memory
	dev *sim.Device
}

// newSimCard opens a LUN on a reader with a card of size bytes filled with
// a pattern, so a stray write changes its hash.
func newSimCard(t *testing.T, size int64) *simCard {
	t.Helper()
	mem := sim.NewMemory(size)
	fill := make([]byte, 1<<20)
	splitmix.Fill(fill, 7)
	for off := int64(0); off < size; off += int64(len(fill)) {
		if _, err := mem.WriteAt(fill[:min(int64(len(fill)), size-off)], off); err != nil {
			t.Fatal(err)
		}
	}
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Medium: mem, Blocks: size / 512}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	lun, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &simCard{lun: lun, mem: mem, dev: dev}
}

// overwrite writes a byte the card does not hold over r, as the work
// that saved it does.
func (c *simCard) overwrite(t *testing.T, r Region) { c.overwriteWith(t, r, 0xEE) }

// overwriteWith fills r with b.
func (c *simCard) overwriteWith(t *testing.T, r Region, b byte) {
	t.Helper()
	if err := c.lun.WriteBlocks(context.Background(), r.Offset/512, bytes.Repeat([]byte{b}, int(r.Length))); err != nil {
		t.Fatal(err)
	}
}

// hash is the SHA-256 of the card's bytes in [off, off+n).
func (c *simCard) hash(t *testing.T, off, n int64) [32]byte {
	t.Helper()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(c.mem, off, n)); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}
