// Package sim is an in-process USB mass-storage reader behind the
// usbms.Endpoint seam: Bulk-Only Transport, and USB Attached SCSI as a
// usbms.UASEndpoint (Config.UAS: UAS alone, as QEMU's usb-uas, or beside
// Bulk-Only; with bulk streams or without), so that everything above the
// seam is tested, and can be tried, without hardware. Its card is memory
// (New) or a file (Open, from the CLI's sim: syntax).
//
// It is a device, not a mock: it parses the 31-byte CBWs the host sends on
// bulk-OUT (or the COMMAND IUs on the command pipe), runs the SCSI command
// itself (its CDB decoding is written independently of package scsi, so a
// host bug is not mirrored by the device), moves the data phase, and
// answers a 13-byte CSW on bulk-IN (or a SENSE IU on the status pipe). It
// keeps sense data for REQUEST SENSE, halts endpoints the way the BOT spec
// says, answers task management, injects faults on demand (see Fault), and
// misbehaves as real readers do (see Misbehaviour). A speed model
// (Config.Speed, Config.Latency) gives benchmarks a device of known speed,
// on the wall clock or a virtual one.
//
// What it promises an importer: its Endpoint methods are for one
// goroutine at a time, as a usbms.Transport calls them, and Stats, Inject
// and Close for any; a card file is locked while open (ErrLocked); a
// refused spec or card is a *SpecError or a *CardError; a transfer the
// device is not ready for (bulk-IN while it waits for a CBW, bulk-OUT while
// it has a CSW to send), NAKed on a real bus, blocks until ctx is done,
// exactly like a host transfer with a timeout.
package sim

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/usbflash/usbflash/usbms"
)

// Medium is the storage behind a LUN: a file, a block device, or memory.
type Medium interface {
	io.ReaderAt
	io.WriterAt
}

// LUN describes one logical unit (one slot of a card reader).
type LUN struct {
	// Medium holds the blocks; nil means sparse zero-filled memory of
	// Blocks*BlockSize bytes, allocated as it is written.
	Medium Medium
	// BlockSize is 512 (the default when 0) or 4096.
	BlockSize int
	// Blocks is the capacity in logical blocks. It may be 0 only when
	// NoMedium is set.
	Blocks int64

	WriteProtected bool // WRITE fails with 7/27/00; MODE SENSE reports WP
	NoMedium       bool // every media access fails with 2/3A/00 (an empty slot)
	Removable      bool // INQUIRY RMB bit

	// Vendor, Product and Revision fill standard INQUIRY; Serial is VPD
	// page 0x80. Empty strings get defaults.
	Vendor, Product, Revision, Serial string

	// Quirks of real readers: answer these commands with 5/20/00.
	RejectModeSense, RejectSyncCache bool

	// MaxTransferBlocks is the MAXIMUM TRANSFER LENGTH of VPD page 0xB0;
	// 0 reports no limit. The device itself accepts any length.
	MaxTransferBlocks uint32
	// OptimalTransferBlocks is the OPTIMAL TRANSFER LENGTH of VPD page
	// 0xB0 (what a card reader reports of its card's erase unit, when it
	// reports anything); 0 reports none.
	OptimalTransferBlocks uint32
	// Unmap is what the LUN offers of logical block provisioning (VPD
	// page 0xB2): "" nothing (as card readers), "unmap" UNMAP and WRITE
	// SAME(16) with UNMAP, "writesame" only the latter, "refuse" UNMAP
	// offered and refused (a reader that passes on what its card does
	// not take). Unmapped blocks read as zeros.
	Unmap string
}

// Config describes a simulated reader.
type Config struct {
	// LUNs are the logical units, LUN 0 first; at least 1, at most 16.
	LUNs []LUN
	// StallGetMaxLUN makes Get Max LUN stall, as many one-slot readers do.
	StallGetMaxLUN bool
	// Speed is the wire speed of data phases in bytes per second; 0 is
	// unlimited.
	Speed float64
	// Latency is added to every command, between its CBW and its CSW.
	Latency time.Duration
	// WriteSpeed, when not 0, is the wire speed of data-out phases (cards
	// write slower than they read); Speed is then the read speed.
	WriteSpeed float64
	// Page, in bytes, is the card's unit of transfer: a READ or WRITE
	// takes the data time of whole pages. 0: no rounding.
	Page int64
	// AllocationUnit (bytes) and AUCost model the card's erase unit: a
	// READ pays AUCost for each unit boundary it straddles, a WRITE for
	// each unit it covers only in part. 0: none.
	AllocationUnit int64
	AUCost         time.Duration
	// VirtualClock runs the speed model on the modelled clock alone
	// (Stats.ModelTime): nothing sleeps, and a transfer the device never
	// answers ends at once as if the host's deadline had passed, its wait
	// charged to the clock. Runs that take minutes of modelled time finish
	// in milliseconds, and their cost is still known.
	VirtualClock bool
	// Serial, Manufacturer and Product are the USB string descriptors.
	Serial, Manufacturer, Product string
	// VID, PID and BCD are idVendor, idProduct and bcdDevice of the
	// device descriptor, which a host looks quirks up by.
	VID, PID, BCD uint16
	// Quirks are the quirk flags the user gives this reader (letters
	// and names, as usbflash's --quirks takes them), passed to the host
	// as they are: the simulator itself does not read them.
	Quirks string
	// Misbehaviour is how this reader departs from the specs.
	Misbehaviour Misbehaviour
	// UAS is the reader's USB Attached SCSI interface, when it has one.
	UAS UASConfig
}

// Defaults for identity strings left empty.
const (
	DefaultVendor       = "USBFLASH"
	DefaultProduct      = "SIM CARD READER"
	DefaultRevision     = "1.0"
	DefaultSerial       = "SIM0000000001"
	DefaultManufacturer = "usbflash"
)

// Device is a simulated mass-storage reader. It implements usbms.Endpoint,
// and usbms.UASEndpoint (in UAS mode when Config.UAS offers it).
// The Endpoint methods must be called from one goroutine at a time; Stats,
// Inject and Close may be called from any goroutine.
type Device struct {
	mu      sync.Mutex
	cfg     Config
	luns    []*lun
	closers []io.Closer   // files opened by Open, closed by Close
	closed  chan struct{} // closed by Close: wakes transfers that block
	isShut  bool

	bot    botState
	faults []*pendingFault
	// disconnectAt is the data byte count (BytesOut+BytesIn) at which the
	// device drops off the bus; negative when no Disconnect is pending.
	disconnectAt int64
	gone         bool
	// backOnReset: the device dropped off the bus (ChokeDisconnect) and
	// comes back when the port is reset.
	backOnReset bool
	// Misbehaviour state: how many commands the injected sense and NOT
	// READY conditions have used, and whether the unit became ready.
	senseUsed, notReadyUsed int
	read10Failed            int
	lastOp                  byte // the opcode being executed
	readyAgain              bool
	// settleUntil is when a reset device takes CBWs again, on clockNow's
	// clock; created is when New made the device.
	settleUntil time.Duration
	created     time.Time
	busyUntil   time.Time // speed model: when the wire is next free
	stats       Stats
	uas         uasState
}

var (
	_ usbms.Endpoint    = (*Device)(nil)
	_ usbms.UASEndpoint = (*Device)(nil)
)

// New builds a device from cfg. It checks the configuration, fills in
// defaults and allocates nothing for memory-backed LUNs until they are
// written.
func New(cfg Config) (*Device, error) {
	if len(cfg.LUNs) == 0 || len(cfg.LUNs) > 16 {
		return nil, fmt.Errorf("sim: %d LUNs configured, want 1 to 16", len(cfg.LUNs))
	}
	if cfg.Speed < 0 || cfg.Latency < 0 || cfg.WriteSpeed < 0 || cfg.Page < 0 || cfg.AllocationUnit < 0 || cfg.AUCost < 0 {
		return nil, errors.New("sim: speed, latency, write speed, page, allocation unit and its cost must not be negative")
	}
	if cfg.UAS.Streams < 0 || cfg.UAS.Streams > 0xFFFF || cfg.UAS.Mode < BOTOnly || cfg.UAS.Mode > UASAndBOT {
		return nil, errors.New("sim: UAS streams must be 0 to 65535, and the mode bot, only or both")
	}
	if cfg.Serial == "" {
		cfg.Serial = DefaultSerial
	}
	if cfg.Manufacturer == "" {
		cfg.Manufacturer = DefaultManufacturer
	}
	if cfg.Product == "" {
		cfg.Product = DefaultProduct
	}
	d := &Device{cfg: cfg, closed: make(chan struct{}), disconnectAt: -1, created: time.Now()}
	for i, l := range cfg.LUNs {
		st, err := newLUN(i, l, cfg.Serial)
		if err != nil {
			return nil, fmt.Errorf("sim: LUN %d: %w", i, err)
		}
		d.luns = append(d.luns, st)
	}
	d.stats.LUNs = make([]LUNStats, len(d.luns))
	d.uas.on = cfg.UAS.Mode != BOTOnly
	d.resetUAS()
	return d, nil
}

// Identity returns the USB string descriptors (iManufacturer, iProduct,
// iSerialNumber) a real device would report at enumeration.
func (d *Device) Identity() (manufacturer, product, serial string) {
	return d.cfg.Manufacturer, d.cfg.Product, d.cfg.Serial
}

// USBID returns idVendor, idProduct and bcdDevice.
func (d *Device) USBID() (vid, pid, bcd uint16) { return d.cfg.VID, d.cfg.PID, d.cfg.BCD }

// Quirks returns Config.Quirks: the quirk flags given for this reader.
func (d *Device) Quirks() string { return d.cfg.Quirks }

// Close closes the files the device opened (Open) and makes every later
// call fail with usbms.ErrNoDevice; transfers blocked in the device return.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.isShut {
		return nil
	}
	d.isShut = true
	close(d.closed)
	var errs []error
	// A controller's write-back cache reaches the flash before the reader
	// is unplugged: its timer fires.
	for i, l := range d.luns {
		if f, ok := l.medium.(interface{ Flush() error }); ok {
			if err := f.Flush(); err != nil {
				errs = append(errs, fmt.Errorf("sim: LUN %d: %w", i, err))
			}
		}
	}
	for _, c := range d.closers {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("sim: close: %w", err))
		}
	}
	return errors.Join(errs...)
}
