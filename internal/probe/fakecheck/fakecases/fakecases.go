// Package fakecases is the table of simulated cards that the fake-card
// probe, `usbflash check` and `write --check` are held to: every kind of
// lie at real sizes that are and are not powers of two, inside the
// probe's window, behind caches, with 512- and 4096-byte blocks, and
// genuine cards. It is test data, shared by the packages that test them.
package fakecases

import "fmt"

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// Case is one card: what it claims, the flash behind it, how it lies
// past it, and the cache that hides it.
type Case struct {
	Name    string
	Block   int64
	Claimed int64  // bytes
	Kind    string // "genuine", "wrap", "drop", "garbage", "unreadable"
	Real    int64  // bytes of flash (Claimed for a genuine card)
	Cache   int64  // bytes
	// WriteBack is the controller's write-back cache in front of the
	// flash (bytes; 0: none), flushed by its own timer every Every READs
	// and WRITEs and never by SYNCHRONIZE CACHE (sim.WriteBack).
	WriteBack int64
	Every     int
}

// MaxCache is the cache bound the table's probes use: above every cache
// in it, small enough to keep the tests quick.
const MaxCache = 96 * mib

// All is the table.
func All() []Case {
	g := func(name string, block, claimed int64) Case {
		return Case{name, block, claimed, "genuine", claimed, 0, 0, 0}
	}
	return []Case{
		g("genuine 512MiB", 512, 512*mib),
		g("genuine 999MiB+512", 512, 999*mib+512),
		{"wrap 256MiB of 1GiB", 512, gib, "wrap", 256 * mib, 0, 0, 0},
		{"wrap 300MiB of 1GiB", 512, gib, "wrap", 300 * mib, 0, 0, 0},
		{"wrap 777777 blocks of 1GiB", 512, gib, "wrap", 777777 * 512, 0, 0, 0},
		{"wrap 3000MiB of 64GiB", 512, 64 * gib, "wrap", 3000 * mib, 0, 0, 0},
		{"wrap 512KiB of 1GiB (inside the window)", 512, gib, "wrap", 512 * kib, 0, 0, 0},
		{"drop 256MiB of 1GiB", 512, gib, "drop", 256 * mib, 0, 0, 0},
		{"drop 777777 blocks of 1GiB", 512, gib, "drop", 777777 * 512, 0, 0, 0},
		{"drop 7.5GiB of 64GiB", 512, 64 * gib, "drop", 7680 * mib, 0, 0, 0},
		{"drop 300KiB of 1GiB (inside the window)", 512, gib, "drop", 300 * kib, 0, 0, 0},
		{"garbage 256MiB of 1GiB", 512, gib, "garbage", 256 * mib, 0, 0, 0},
		{"garbage 241126 blocks of 1GiB", 512, gib, "garbage", 241126 * 512, 0, 0, 0},
		{"wrap 256MiB of 1GiB, 16MiB cache", 512, gib, "wrap", 256 * mib, 16 * mib, 0, 0},
		{"drop 300MiB of 1GiB, 16MiB cache", 512, gib, "drop", 300 * mib, 16 * mib, 0, 0},
		{"drop 777777 blocks of 1GiB, 64MiB cache", 512, gib, "drop", 777777 * 512, 64 * mib, 0, 0},
		{"garbage 256MiB of 1GiB, 64MiB cache", 512, gib, "garbage", 256 * mib, 64 * mib, 0, 0},
		{"garbage 7.5GiB of 64GiB, 32MiB cache", 512, 64 * gib, "garbage", 7680 * mib, 32 * mib, 0, 0},
		{"drop 100MiB of 256MiB, 8MiB cache (a probe in every flush command)", 512, 256 * mib, "drop", 100 * mib, 8 * mib, 0, 0},
		{"unreadable 256MiB of 1GiB", 512, gib, "unreadable", 256 * mib, 0, 0, 0},
		{"unreadable 777777 blocks of 1GiB, 16MiB cache", 512, gib, "unreadable", 777777 * 512, 16 * mib, 0, 0},
		{"unreadable 31GiB of 256GiB (f3 issue 228)", 512, 256 * gib, "unreadable", 31 * gib, 0, 0, 0},
		{"drop 1GiB+4KiB of 2GiB, 4096-byte blocks", 4096, 2 * gib, "drop", gib + 4*kib, 0, 0, 0},
		{"wrap 100MiB of 2GiB, 4096-byte blocks, 8MiB cache", 4096, 2 * gib, "wrap", 100 * mib, 8 * mib, 0, 0},
		// Behind a write-back cache that the controller's own timer
		// flushes, not SYNCHRONIZE CACHE: a write and the read that
		// follows it at once can both be answered from its RAM. The
		// first is issue 41's: device-mapper mapping 4x its flash onto
		// 96 MiB, served by the Linux USB mass-storage gadget.
		{"wrap 96MiB of 384MiB, 1MiB write-back flushed every 8 commands", 512, 384 * mib, "wrap", 96 * mib, 0, mib, 8},
		{"wrap 96MiB of 384MiB, 64KiB write-back flushed every 2 commands", 512, 384 * mib, "wrap", 96 * mib, 0, 64 * kib, 2},
		{"wrap 96MiB of 384MiB, 16MiB write-back flushed every 256 commands", 512, 384 * mib, "wrap", 96 * mib, 0, 16 * mib, 256},
		{"wrap 777777 blocks of 1GiB, 4MiB write-back flushed every 64 commands", 512, gib, "wrap", 777777 * 512, 0, 4 * mib, 64},
		{"wrap 512KiB of 1GiB (inside the window), 4MiB write-back flushed every 64 commands", 512, gib, "wrap", 512 * kib, 0, 4 * mib, 64},
		{"drop 777777 blocks of 1GiB, 64MiB write-back flushed every 1000 commands", 512, gib, "drop", 777777 * 512, 0, 64 * mib, 1000},
		{"garbage 256MiB of 1GiB, 16MiB write-back flushed every 32 commands", 512, gib, "garbage", 256 * mib, 0, 16 * mib, 32},
		{"genuine 512MiB, 4MiB write-back flushed every 32 commands", 512, 512 * mib, "genuine", 512 * mib, 0, 4 * mib, 32},
	}
}

// Fake says whether the card lies.
func (c Case) Fake() bool { return c.Kind != "genuine" }

// SimOptions are the sim: target's options that make this card.
func (c Case) SimOptions() string {
	o := fmt.Sprintf("size=%d&block=%d", c.Claimed, c.Block)
	if c.Fake() {
		o += fmt.Sprintf("&fake=%s&real=%d", c.Kind, c.Real)
		if c.Cache > 0 {
			o += fmt.Sprintf("&fake-cache=%d", c.Cache)
		}
	}
	if c.WriteBack > 0 {
		o += fmt.Sprintf("&write-back=%d&write-back-every=%d", c.WriteBack, c.Every)
	}
	return o
}
