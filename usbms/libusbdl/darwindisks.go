//go:build linux || darwin || windows

package libusbdl

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/usbflash/usbflash/usbms/usbdev"
)

// macOS: which disks a USB reader is, and whether a volume of one is
// mounted. The I/O Registry has both: a USB device (IOUSBHostDevice) with
// its locationID, IDs and serial, and under it the IOMedia objects of its
// cards with their BSD names (disk4). The mounted file systems come from
// getfsstat. This file holds the logic, tested on every system; the
// commands run on macOS only (platform_darwin.go).

// mount is one mounted file system: the device it is mounted from
// (/dev/disk4s1), where, and its type.
type mount struct {
	from, on, fstype string
}

// darwinDisks is a usbdev.DiskView over the I/O Registry and the mounts.
type darwinDisks struct {
	ioreg  func() ([]byte, error)
	mounts func() ([]mount, error)
}

// InterfaceDisks returns the whole disks of the USB device at the port of
// iface (Info.SysfsName: "PORTPATH:CONFIG.IFACE"), each with the volumes
// of it that are mounted.
func (v darwinDisks) InterfaceDisks(iface string) ([]usbdev.KernelDisk, error) {
	port, _, _ := strings.Cut(iface, ":")
	out, err := v.ioreg()
	if err != nil {
		return nil, fmt.Errorf("reading the I/O Registry (ioreg): %w", err)
	}
	root, err := parsePlist(out)
	if err != nil {
		return nil, fmt.Errorf("reading ioreg's output: %w", err)
	}
	names := usbDiskNames(root, port)
	if len(names) == 0 {
		return nil, nil
	}
	ms, err := v.mounts()
	if err != nil {
		return nil, fmt.Errorf("reading the mounted file systems: %w", err)
	}
	return disksWithUses(names, ms), nil
}

// portPathOf is libusb's port path of a macOS locationID: the bus in the
// top byte, then one port per nibble from the top until a zero one
// (libusb's darwin backend numbers buses and ports so).
func portPathOf(loc int64) string {
	bus := int(loc>>24) & 0xff
	var ports []int
	for shift := 20; shift >= 0; shift -= 4 {
		p := int(loc>>shift) & 0xf
		if p == 0 {
			break
		}
		ports = append(ports, p)
	}
	return usbdev.FormatPortPath(bus, ports)
}

// usbDiskNames finds, in ioreg's tree, the USB device at port path port
// and returns the BSD names of the whole disks (IOMedia with Whole) below
// it, sorted.
func usbDiskNames(root any, port string) []string {
	var names []string
	var walk func(n any, under bool)
	walk = func(n any, under bool) {
		switch n := n.(type) {
		case []any:
			for _, c := range n {
				walk(c, under)
			}
		case map[string]any:
			if loc, ok := n["locationID"].(int64); ok && n["idVendor"] != nil && portPathOf(loc) == port {
				under = true
			}
			if under {
				if name, ok := n["BSD Name"].(string); ok && n["Whole"] == true && !contains(names, name) {
					names = append(names, name)
				}
			}
			walk(n["IORegistryEntryChildren"], under)
		}
	}
	walk(root, false)
	sort.Strings(names)
	return names
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// disksWithUses makes a KernelDisk of each whole disk with the mounts of
// it and of its slices (disk4s1).
func disksWithUses(names []string, ms []mount) []usbdev.KernelDisk {
	var out []usbdev.KernelDisk
	for _, name := range names {
		d := usbdev.KernelDisk{Name: name, Node: "/dev/" + name, LUN: -1}
		for _, m := range ms {
			dev := strings.TrimPrefix(m.from, "/dev/")
			if dev != name && !(strings.HasPrefix(dev, name+"s") && isDigits(dev[len(name)+1:])) {
				continue
			}
			if dev != name && !contains(d.Partitions, m.from) {
				d.Partitions = append(d.Partitions, m.from)
			}
			d.InUse = append(d.InUse, usbdev.DiskUse{Kind: usbdev.DiskMounted, Node: m.from, Of: m.from,
				MountPoint: m.on, FSType: m.fstype})
		}
		out = append(out, d)
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parsePlist reads an XML property list into Go values: dict is
// map[string]any, array []any, string string, integer int64, real
// float64, true and false bool, data and date their text.
func parsePlist(b []byte) (any, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err != nil {
			if err == io.EOF {
				err = errors.New("no plist element")
			}
			return nil, err
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "plist" {
			v, end, err := plistValue(dec)
			if err != nil {
				return nil, err
			}
			if end {
				return nil, errors.New("an empty plist")
			}
			return v, nil
		}
	}
}

// plistValue reads the next value; end is true at the end element of
// the enclosing array, dict or plist instead.
func plistValue(dec *xml.Decoder) (v any, end bool, err error) {
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, false, err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil, true, nil
		case xml.StartElement:
			switch t.Name.Local {
			case "dict":
				m := map[string]any{}
				for {
					k, end, err := plistValue(dec)
					if err != nil {
						return nil, false, err
					}
					if end {
						return m, false, nil
					}
					key, ok := k.(plistKey)
					if !ok {
						return nil, false, errors.New("a dict value without its key")
					}
					val, end, err := plistValue(dec)
					if err != nil {
						return nil, false, err
					}
					if end {
						return nil, false, fmt.Errorf("key %q without a value", key)
					}
					m[string(key)] = val
				}
			case "array":
				a := []any{}
				for {
					val, end, err := plistValue(dec)
					if err != nil {
						return nil, false, err
					}
					if end {
						return a, false, nil
					}
					a = append(a, val)
				}
			case "true", "false":
				if err := dec.Skip(); err != nil {
					return nil, false, err
				}
				return t.Name.Local == "true", false, nil
			default:
				var s string
				if err := dec.DecodeElement(&s, &t); err != nil {
					return nil, false, err
				}
				switch t.Name.Local {
				case "key":
					return plistKey(s), false, nil
				case "integer":
					n, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
					if err != nil {
						u, uerr := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
						if uerr != nil {
							return nil, false, fmt.Errorf("integer %q: %w", s, err)
						}
						n = int64(u)
					}
					return n, false, nil
				case "real":
					f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
					if err != nil {
						return nil, false, fmt.Errorf("real %q: %w", s, err)
					}
					return f, false, nil
				}
				return s, false, nil
			}
		}
	}
}

// plistKey is a dict's key, told apart from a string value.
type plistKey string
