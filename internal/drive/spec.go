// Package drive turns what a user types as a TARGET into an opened,
// checked device: it parses the target syntax, lists readers, opens one
// (or the slots of one reader together), watches for cards as they are
// inserted, runs the checks of the target every write passes before its
// first byte (in use, locked, the image itself when it opens; then
// write-protected, too small for what is written: CheckWrite), and says
// what a target is in its own words (Describe, Reader.Facts), so that no
// presenter needs the transport's or the USB backend's vocabulary.
package drive

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/usbflash/usbflash/internal/lib/units"
)

// Scheme says which world a target lives in.
type Scheme int

// Schemes of a Spec.
const (
	USB  Scheme = iota + 1 // a real reader through libusb
	File                   // a file or block device through the kernel
	Sim                    // the simulated reader
	Disk                   // a whole disk, raw: /dev/sdX, /dev/rdiskN, \\.\PhysicalDriveN
)

// Spec is a parsed TARGET argument. One parser serves every command, so a
// target means the same thing to list, info, write, verify, read and bench.
type Spec struct {
	Scheme Scheme
	Raw    string // as the user typed it

	// usb: exactly one of the three selectors is set.
	vid, pid  uint16
	hasVIDPID bool
	serial    string
	bus, addr int
	hasBus    bool
	index     int // from `usbflash list`; -1 when not chosen by index
	// LUN is the slot the target names; -1: the only LUN, or an error if
	// there are several.
	LUN int
	// Path is the file of file: and sim: targets, without options, and
	// the disk of a disk: target as typed.
	Path string

	spec     string // sim: the path and the simulator's options
	fileSize int64  // file:PATH?size=N: create or extend the file to N bytes
}

func (t Spec) String() string { return t.Raw }

// Syntax is every form a target may take, as errors and help name them.
const Syntax = "usb:VID:PID[:SERIAL][/LUN], usb:BUS.ADDR[/LUN], N[/LUN] (the index from `usbflash list`), disk:DISK (a whole disk: /dev/sdX, /dev/rdiskN, \\\\.\\PhysicalDriveN), file:PATH[?size=SIZE] or sim:PATH[/LUN][?options][&lun=N]"

// Parse reads the TARGET syntax of docs/usage.md's table, handing each scheme to
// its own parser. Errors (of class Usage) all have one shape: the argument, what
// is wrong with it, and the accepted forms.
func Parse(s string) (Spec, error) {
	t := Spec{Raw: s, index: -1, LUN: -1}
	var why string
	switch {
	case s == "":
		why = "empty"
	case strings.HasPrefix(s, "file:"):
		why = parseFileTarget(&t, strings.TrimPrefix(s, "file:"))
	case strings.HasPrefix(s, "sim:"):
		why = parseSimTarget(&t, strings.TrimPrefix(s, "sim:"))
	case strings.HasPrefix(s, "disk:"):
		why = parseDiskTarget(&t, strings.TrimPrefix(s, "disk:"))
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "."), strings.HasPrefix(s, "~"), strings.HasPrefix(s, `\\`):
		// A path, typed as one would for dd: the one likely meaning.
		return Spec{}, usageKind(s, ErrPath, fmt.Sprintf("target %q is a path, which a target names as %s", s, PathTarget(s)))
	default:
		why = parseUSBTarget(&t, s)
	}
	if why != "" {
		return Spec{}, usageErr(s, fmt.Sprintf("target %q: %s; a target is one of %s", s, why, Syntax))
	}
	return t, nil
}

// parseFileTarget reads PATH[?size=SIZE] after "file:"; it returns what is
// wrong, or "".
func parseFileTarget(t *Spec, spec string) string {
	t.Scheme = File
	path, query, hasQuery := strings.Cut(spec, "?")
	t.Path = path
	if t.Path == "" {
		return "file: needs a path"
	}
	if hasQuery {
		size, ok := strings.CutPrefix(query, "size=")
		n, err := units.ParseSize(size)
		if !ok || err != nil || n <= 0 || n%512 != 0 {
			return "file: takes one option, ?size=SIZE, a multiple of 512 bytes (e.g. file:out.img?size=8GiB)"
		}
		t.fileSize = n
	}
	return ""
}

// parseDiskTarget reads DISK after "disk:": the whole disk's node as the
// system names it. Whether it is one is for the open to find out.
func parseDiskTarget(t *Spec, disk string) string {
	t.Scheme = Disk
	t.Path = disk
	switch {
	case disk == "":
		return "disk: needs a disk, like disk:/dev/sdb, disk:/dev/rdisk4 or disk:\\\\.\\PhysicalDrive2"
	case strings.ContainsAny(disk, "?&"):
		return "disk: takes no options"
	}
	return ""
}

// PathTarget is the target a path typed alone means: the whole disk for a
// disk's node (/dev/..., \\.\PhysicalDriveN), the file otherwise.
func PathTarget(path string) string {
	if strings.HasPrefix(path, "/dev/") || strings.HasPrefix(path, `\\.\`) {
		return "disk:" + path
	}
	return "file:" + path
}

// parseSimTarget reads PATH[/LUN][?options] after "sim:". lun=N picks a
// slot, as /LUN does for usb:; the other options configure the simulator
// and stay in t.spec for sim.Open.
//
// PATH/N, the name usbflash gives slot N of a simulated reader, names that
// slot of the card PATH when PATH/N is not a file and PATH is one; without
// luns= the reader then has N+1 slots, so the slot exists.
func parseSimTarget(t *Spec, spec string) string {
	t.Scheme = Sim
	path, query, _ := strings.Cut(spec, "?")
	t.Path = path
	if t.Path == "" {
		return "sim: needs a path to the card's backing file"
	}
	slot := -1
	if card, n, ok := simSlot(path); ok {
		t.Path, slot = card, n
	}
	var opts []string
	hasLUNs := false
	for _, kv := range strings.Split(query, "&") {
		v, isLUN := strings.CutPrefix(kv, "lun=")
		if !isLUN {
			if kv != "" {
				opts = append(opts, kv)
			}
			hasLUNs = hasLUNs || strings.HasPrefix(kv, "luns=")
			continue
		}
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil || n > 15 {
			return "lun= must be a number from 0 to 15"
		}
		t.LUN = int(n)
	}
	if slot >= 0 {
		if t.LUN >= 0 && t.LUN != slot {
			return fmt.Sprintf("/%d and lun=%d name different slots", slot, t.LUN)
		}
		t.LUN = slot
		if !hasLUNs {
			opts = append(opts, fmt.Sprintf("luns=%d", slot+1))
		}
	}
	t.spec = t.Path
	if len(opts) > 0 {
		t.spec += "?" + strings.Join(opts, "&")
	}
	return ""
}

// simSlot reads PATH/N as slot N of the card PATH: N from 0 to 15, PATH a
// file (so PATH/N is none).
func simSlot(path string) (card string, n int, ok bool) {
	i := strings.LastIndexByte(path, '/')
	if i <= 0 {
		return "", 0, false
	}
	lun, err := strconv.ParseUint(path[i+1:], 10, 8)
	if err != nil || lun > 15 {
		return "", 0, false
	}
	// A file at PATH means there is none at PATH/N.
	if st, err := os.Stat(path[:i]); err != nil || st.IsDir() {
		return "", 0, false
	}
	return path[:i], int(lun), true
}

// parseUSBTarget reads usb:VID:PID[:SERIAL][/LUN], usb:BUS.ADDR[/LUN] or
// N[/LUN], the index from `usbflash list`.
func parseUSBTarget(t *Spec, s string) string {
	t.Scheme = USB
	sel, hasUSB := strings.CutPrefix(s, "usb:")
	if before, lun, ok := strings.Cut(sel, "/"); ok {
		n, err := strconv.ParseUint(lun, 10, 8)
		if err != nil || n > 15 {
			return "the LUN after / must be a number from 0 to 15"
		}
		t.LUN, sel = int(n), before
	}
	if !hasUSB {
		n, err := strconv.ParseUint(sel, 10, 16)
		if err != nil {
			return "not a known form (did you mean file:" + t.Raw + "?)"
		}
		t.index = int(n)
		return ""
	}
	if b, a, ok := strings.Cut(sel, "."); ok && !strings.Contains(sel, ":") {
		bus, err1 := strconv.ParseUint(b, 10, 8)
		addr, err2 := strconv.ParseUint(a, 10, 8)
		if err1 != nil || err2 != nil || addr == 0 {
			return "BUS.ADDR must be two decimal numbers, like usb:1.4"
		}
		t.bus, t.addr, t.hasBus = int(bus), int(addr), true
		return ""
	}
	parts := strings.SplitN(sel, ":", 3)
	if len(parts) < 2 {
		return "usb: needs VID:PID (hex, like 46f4:0001) or BUS.ADDR (like 1.4)"
	}
	vid, err1 := strconv.ParseUint(parts[0], 16, 16)
	pid, err2 := strconv.ParseUint(parts[1], 16, 16)
	if err1 != nil || err2 != nil {
		return "VID and PID must be hexadecimal, like 46f4:0001"
	}
	t.vid, t.pid, t.hasVIDPID = uint16(vid), uint16(pid), true
	if len(parts) == 3 {
		if parts[2] == "" {
			return "empty serial after VID:PID:"
		}
		t.serial = parts[2]
	}
	return ""
}
