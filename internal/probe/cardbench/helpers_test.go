package cardbench

import (
	"context"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
)

// simCard is a simulated reader with a card of known content.
type simCard struct {
	dev *sim.Device
	lun *usbms.LUN
	mem *sim.Memory
}

// newSimCard opens a LUN on a reader with cfg's speed model and a card of
// size bytes filled with a pattern, so a stray write changes its hash.
func newSimCard(t *testing.T, cfg sim.Config, size int64) *simCard {
	t.Helper()
	mem := sim.NewMemory(size)
	fill := make([]byte, 1<<20)
	fillRandom(fill, 7)
	for off := int64(0); off < size; off += int64(len(fill)) {
		if _, err := mem.WriteAt(fill[:min(int64(len(fill)), size-off)], off); err != nil {
			t.Fatal(err)
		}
	}
	cfg.LUNs = []sim.LUN{{Medium: mem, Blocks: size / 512}}
	dev, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return &simCard{dev: dev, lun: openLUN(t, dev), mem: mem}
}

// openLUN runs BOT over dev and opens its LUN 0.
func openLUN(t testing.TB, dev *sim.Device) *usbms.LUN {
	t.Helper()
	lun, err := usbms.OpenLUN(context.Background(), usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim"}), 0, usbms.LUNOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return lun
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
