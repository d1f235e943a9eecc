package main

import (
	"fmt"

	"strconv"
	"strings"

	"usbflash/internal/units"
)

// targetKind says which world a target lives in.
type targetKind int

const (
	targetUSB  targetKind = iota + 1 // a real reader through libusb
	targetFile                       // a file or block device through the kernel
	targetSim                        // the simulated reader
)

// target is a parsed TARGET argument. One parser serves every command, so a
// target means the same thing to list, info, write and verify.
type target struct {
	kind targetKind
	raw  string

	// usb: exactly one of the three selectors is set.
	vid, pid  uint16
	hasVIDPID bool
	serial    string
	bus, addr int
	hasBus    bool
	index     int // from `usbflash list`; -1 when not chosen by index
	lun       int // -1: the only LUN, or an error if there are several

	path     string // file: and sim: without options
	spec     string // file: and sim: everything after the prefix
	fileSize int64  // file:PATH?size=N: create or extend the file to N bytes
}

const targetSyntax = "usb:VID:PID[:SERIAL][/LUN], usb:BUS.ADDR[/LUN], N[/LUN] (the index from `usbflash list`), file:PATH[?size=SIZE] or sim:PATH[?options][&lun=N]"

// parseTarget reads the TARGET syntax of DESIGN.md. Errors all have one
// shape: the argument, what is wrong with it, and the accepted forms.
func parseTarget(s string) (target, error) {
	t := target{raw: s, index: -1, lun: -1}
	bad := func(why string) (target, error) {
		return target{}, &usageError{fmt.Sprintf("target %q: %s; a target is one of %s", s, why, targetSyntax)}
	}
	switch {
	case s == "":
		return bad("empty")
	case strings.HasPrefix(s, "file:"):
		t.kind, t.spec = targetFile, strings.TrimPrefix(s, "file:")
		path, query, hasQuery := strings.Cut(t.spec, "?")
		t.path = path
		if t.path == "" {
			return bad("file: needs a path")
		}
		if hasQuery {
			size, ok := strings.CutPrefix(query, "size=")
			n, err := units.ParseSize(size)
			if !ok || err != nil || n <= 0 || n%512 != 0 {
				return bad("file: takes one option, ?size=SIZE, a multiple of 512 bytes (e.g. file:out.img?size=8GiB)")
			}
			t.fileSize = n
		}
		return t, nil
	case strings.HasPrefix(s, "sim:"):
		t.kind, t.spec = targetSim, strings.TrimPrefix(s, "sim:")
		path, query, _ := strings.Cut(t.spec, "?")
		t.path = path
		if t.path == "" {
			return bad("sim: needs a path to the card's backing file")
		}
		// lun=N picks a slot, as /LUN does for usb:; the rest of the query
		// configures the simulator.
		var opts []string
		for _, kv := range strings.Split(query, "&") {
			v, isLUN := strings.CutPrefix(kv, "lun=")
			if !isLUN {
				if kv != "" {
					opts = append(opts, kv)
				}
				continue
			}
			n, err := strconv.ParseUint(v, 10, 8)
			if err != nil || n > 15 {
				return bad("lun= must be a number from 0 to 15")
			}
			t.lun = int(n)
		}
		if len(opts) > 0 {
			t.spec = path + "?" + strings.Join(opts, "&")
		} else {
			t.spec = path
		}
		return t, nil
	}

	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") {
		// A path, typed as one would for dd: the one likely meaning.
		return target{}, &usageError{fmt.Sprintf("target %q is a path: write file:%s for a file or disk through the kernel", s, s)}
	}
	t.kind = targetUSB
	sel, hasUSB := strings.CutPrefix(s, "usb:")
	if sel, lun, ok := strings.Cut(sel, "/"); ok {
		n, err := strconv.ParseUint(lun, 10, 8)
		if err != nil || n > 15 {
			return bad("the LUN after / must be a number from 0 to 15")
		}
		t.lun = int(n)
		s = sel
	} else {
		s = sel
	}
	if !hasUSB {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return bad("not a known form (did you mean file:" + t.raw + "?)")
		}
		t.index = int(n)
		return t, nil
	}
	if b, a, ok := strings.Cut(s, "."); ok && !strings.Contains(s, ":") {
		bus, err1 := strconv.ParseUint(b, 10, 8)
		addr, err2 := strconv.ParseUint(a, 10, 8)
		if err1 != nil || err2 != nil || addr == 0 {
			return bad("BUS.ADDR must be two decimal numbers, like usb:1.4")
		}
		t.bus, t.addr, t.hasBus = int(bus), int(addr), true
		return t, nil
	}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 {
		return bad("usb: needs VID:PID (hex, like 46f4:0001) or BUS.ADDR (like 1.4)")
	}
	vid, err1 := strconv.ParseUint(parts[0], 16, 16)
	pid, err2 := strconv.ParseUint(parts[1], 16, 16)
	if err1 != nil || err2 != nil {
		return bad("VID and PID must be hexadecimal, like 46f4:0001")
	}
	t.vid, t.pid, t.hasVIDPID = uint16(vid), uint16(pid), true
	if len(parts) == 3 {
		if parts[2] == "" {
			return bad("empty serial after VID:PID:")
		}
		t.serial = parts[2]
	}
	return t, nil
}

// usageError is a mistake on the command line: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
