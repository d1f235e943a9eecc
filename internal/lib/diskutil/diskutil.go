// Package diskutil reads what macOS's diskutil says about disks (its
// -plist outputs, decoded with howett.net/plist) and runs the few diskutil
// verbs a raw-disk write needs: list, info, unmountDisk and eject. The
// parsers are plain Go and tested on any system from outputs kept in
// testdata; the commands run only where diskutil exists.
package diskutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"howett.net/plist"
)

// List is `diskutil list -plist [FILTER...]`: every disk the filter
// selects, with its partitions.
type List struct {
	AllDisksAndPartitions []ListedDisk `plist:"AllDisksAndPartitions"`
	// WholeDisks are the identifiers of the whole disks, "disk4".
	WholeDisks []string `plist:"WholeDisks"`
}

// ListedDisk is one whole disk of a List.
type ListedDisk struct {
	DeviceIdentifier string      `plist:"DeviceIdentifier"`
	Content          string      `plist:"Content"` // the partition scheme, "FDisk_partition_scheme"
	Size             int64       `plist:"Size"`
	MountPoint       string      `plist:"MountPoint"` // a disk without partitions mounted whole
	Partitions       []Partition `plist:"Partitions"`
	// APFSPhysicalStores name the partitions a synthesized APFS
	// container lives on.
	APFSPhysicalStores []Store     `plist:"APFSPhysicalStores"`
	APFSVolumes        []Partition `plist:"APFSVolumes"`
}

// Partition is a partition of a listed disk, or an APFS volume.
type Partition struct {
	DeviceIdentifier string `plist:"DeviceIdentifier"`
	Content          string `plist:"Content"`
	VolumeName       string `plist:"VolumeName"`
	MountPoint       string `plist:"MountPoint"`
	Size             int64  `plist:"Size"`
}

// Store is one physical store of an APFS container, "disk0s2".
type Store struct {
	DeviceIdentifier  string `plist:"DeviceIdentifier"`  // as list writes it
	APFSPhysicalStore string `plist:"APFSPhysicalStore"` // as info writes it
}

// ID is the store's identifier, as whichever verb wrote it.
func (s Store) ID() string {
	if s.APFSPhysicalStore != "" {
		return s.APFSPhysicalStore
	}
	return s.DeviceIdentifier
}

// Info is `diskutil info -plist DEVICE`: what macOS knows of one disk,
// partition or volume. Only the keys a raw-disk write decides by.
type Info struct {
	DeviceIdentifier    string `plist:"DeviceIdentifier"` // "disk4"
	DeviceNode          string `plist:"DeviceNode"`       // "/dev/disk4"
	ParentWholeDisk     string `plist:"ParentWholeDisk"`  // "disk4", for a partition its disk
	WholeDisk           bool   `plist:"WholeDisk"`
	Internal            bool   `plist:"Internal"`
	RemovableMedia      bool   `plist:"RemovableMedia"`
	Ejectable           bool   `plist:"Ejectable"`
	BusProtocol         string `plist:"BusProtocol"` // "USB", "Secure Digital", "PCI-Express", "Apple Fabric"
	MediaName           string `plist:"MediaName"`   // "Generic- SD/MMC"
	IORegistryEntryName string `plist:"IORegistryEntryName"`
	VirtualOrPhysical   string `plist:"VirtualOrPhysical"` // "Physical", "Virtual", "Unknown"
	MountPoint          string `plist:"MountPoint"`
	VolumeName          string `plist:"VolumeName"`
	Size                int64  `plist:"Size"`
	TotalSize           int64  `plist:"TotalSize"`
	DeviceBlockSize     int    `plist:"DeviceBlockSize"`
	WritableMedia       bool   `plist:"WritableMedia"`
	OSInternalMedia     bool   `plist:"OSInternalMedia"`
	// APFSPhysicalStores are the partitions an APFS volume's container
	// lives on: for the system volume, the disk the Mac boots from.
	APFSPhysicalStores []Store `plist:"APFSPhysicalStores"`
}

// Bytes is the disk's size: TotalSize where diskutil gives it, else Size.
func (i Info) Bytes() int64 {
	if i.TotalSize > 0 {
		return i.TotalSize
	}
	return i.Size
}

// ParseList decodes `diskutil list -plist` output.
func ParseList(b []byte) (List, error) {
	var l List
	if err := decode(b, &l); err != nil {
		return List{}, fmt.Errorf("diskutil list: %w", err)
	}
	return l, nil
}

// ParseInfo decodes `diskutil info -plist` output. An answer without a
// DeviceIdentifier is no disk's.
func ParseInfo(b []byte) (Info, error) {
	var i Info
	if err := decode(b, &i); err != nil {
		return Info{}, fmt.Errorf("diskutil info: %w", err)
	}
	if i.DeviceIdentifier == "" {
		return Info{}, errors.New("diskutil info: no DeviceIdentifier in its answer")
	}
	return i, nil
}

// decode reads an XML property list (what -plist prints) into v; any
// other text (an error message where a plist was due) is an error.
func decode(b []byte, v any) error {
	format, err := plist.Unmarshal(b, v)
	if err != nil {
		return fmt.Errorf("not a property list: %w", err)
	}
	if format != plist.XMLFormat && format != plist.BinaryFormat {
		return fmt.Errorf("not a property list (%s)", plist.FormatNames[format])
	}
	return nil
}

// WholeDiskOf is the whole disk an identifier belongs to: "disk4" of
// "disk4s2" and of "disk4"; "" for what is no disk identifier.
func WholeDiskOf(id string) string {
	m := wholeRE.FindStringSubmatch(strings.TrimPrefix(strings.TrimPrefix(id, "/dev/"), "r"))
	if m == nil {
		return ""
	}
	return m[1]
}

var wholeRE = regexp.MustCompile(`^(disk[0-9]+)(s[0-9]+)*$`)

// Runner runs diskutil with args and returns what it printed on standard
// output; an error carries what it printed on standard error.
type Runner func(ctx context.Context, args ...string) ([]byte, error)

// Exec runs /usr/sbin/diskutil.
func Exec(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "/usr/sbin/diskutil", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		return out, &CommandError{Args: args, Output: msg, Err: err}
	}
	return out, nil
}

// CommandError is a diskutil that failed: its arguments, what it said,
// and how it ended.
type CommandError struct {
	Args   []string
	Output string
	Err    error
}

func (e *CommandError) Error() string {
	if e.Output == "" {
		return fmt.Sprintf("diskutil %s: %v", strings.Join(e.Args, " "), e.Err)
	}
	return fmt.Sprintf("diskutil %s: %v: %s", strings.Join(e.Args, " "), e.Err, e.Output)
}

func (e *CommandError) Unwrap() error { return e.Err }

// Physical lists the physical disks (`diskutil list -plist physical`),
// internal ones included: a Mac's built-in SD slot is internal, and
// whether a disk may be written is decided from its Info.
func Physical(ctx context.Context, run Runner) (List, error) {
	out, err := run(ctx, "list", "-plist", "physical")
	if err != nil {
		return List{}, err
	}
	return ParseList(out)
}

// All lists every disk (`diskutil list -plist`), the synthesized APFS
// containers too, whose volumes Mounted finds on the disks they live on.
func All(ctx context.Context, run Runner) (List, error) {
	out, err := run(ctx, "list", "-plist")
	if err != nil {
		return List{}, err
	}
	return ParseList(out)
}

// InfoOf describes one device (`diskutil info -plist DEV`): a disk
// identifier, a device node or a mount point ("/").
func InfoOf(ctx context.Context, run Runner, dev string) (Info, error) {
	out, err := run(ctx, "info", "-plist", dev)
	if err != nil {
		return Info{}, err
	}
	return ParseInfo(out)
}

// BootDisks are the whole disks the running system's volume lives on:
// the disk of "/" and, for an APFS system volume, the disks of its
// container's physical stores (a synthesized disk3 lives on disk0s2).
func BootDisks(root Info) []string {
	var out []string
	add := func(id string) {
		if d := WholeDiskOf(id); d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	add(root.ParentWholeDisk)
	add(root.DeviceIdentifier)
	for _, s := range root.APFSPhysicalStores {
		add(s.ID())
	}
	return out
}

// Mounted lists the volumes of whole disk id that are mounted, from a
// List: its partitions, and the volumes of the APFS containers whose
// stores are on it. Each is "disk4s1 on /Volumes/bootfs".
func (l List) Mounted(id string) []Partition {
	var out []Partition
	for _, d := range l.AllDisksAndPartitions {
		onDisk := d.DeviceIdentifier == id
		for _, s := range d.APFSPhysicalStores {
			onDisk = onDisk || WholeDiskOf(s.ID()) == id
		}
		if !onDisk {
			continue
		}
		if d.MountPoint != "" {
			out = append(out, Partition{DeviceIdentifier: d.DeviceIdentifier, MountPoint: d.MountPoint})
		}
		for _, p := range append(append([]Partition(nil), d.Partitions...), d.APFSVolumes...) {
			if p.MountPoint != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// Dissenter is a process that kept a volume from being unmounted.
type Dissenter struct {
	Volume string // "disk4s1", when diskutil names it
	PID    int
	Path   string // the program, when diskutil names it
}

// UnmountError is an unmountDisk that failed: what diskutil said, and
// who dissented when it said so.
type UnmountError struct {
	Disk       string
	Output     string
	Dissenters []Dissenter
	Err        error
}

func (e *UnmountError) Error() string {
	if len(e.Dissenters) > 0 {
		var who []string
		for _, d := range e.Dissenters {
			s := fmt.Sprintf("PID %d", d.PID)
			if d.Path != "" {
				s += " (" + d.Path + ")"
			}
			if d.Volume != "" {
				s = d.Volume + " held by " + s
			}
			who = append(who, s)
		}
		return fmt.Sprintf("unmounting the volumes of %s failed: %s", e.Disk, strings.Join(who, ", "))
	}
	return fmt.Sprintf("unmounting the volumes of %s failed: %s", e.Disk, e.Output)
}

func (e *UnmountError) Unwrap() error { return e.Err }

// UnmountDisk unmounts every volume of whole disk id (`diskutil
// unmountDisk [force] DISK`); force unmounts them even when a process
// holds files open on them. A refusal is an *UnmountError.
func UnmountDisk(ctx context.Context, run Runner, id string, force bool) error {
	args := []string{"unmountDisk"}
	if force {
		args = append(args, "force")
	}
	out, err := run(ctx, append(args, id)...)
	if err == nil {
		return nil
	}
	text := string(out)
	var ce *CommandError
	if errors.As(err, &ce) {
		text = ce.Output + "\n" + text
	}
	return &UnmountError{Disk: id, Output: strings.TrimSpace(firstLine(text)), Dissenters: ParseDissenters(text), Err: err}
}

// Eject ejects whole disk id (`diskutil eject DISK`): its volumes are
// unmounted and the medium is let go, so it can be pulled out.
func Eject(ctx context.Context, run Runner, id string) error {
	_, err := run(ctx, "eject", id)
	return err
}

var dissentRE = regexp.MustCompile(`(?:Volume .* on (disk[0-9s]+) )?.*dissented by PID (\d+)(?: \(([^)]*)\))?`)

// ParseDissenters reads the processes diskutil names as having kept a
// volume mounted ("... dissented by PID 512 (/usr/libexec/mds)"). The
// parent diskutil names after each ("Dissenter parent PPID 1 ...") is not
// one.
func ParseDissenters(text string) []Dissenter {
	var out []Dissenter
	for _, line := range strings.Split(text, "\n") {
		m := dissentRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		out = append(out, Dissenter{Volume: m[1], PID: pid, Path: m[3]})
	}
	return out
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
