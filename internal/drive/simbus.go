package drive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// SettingReaders is the setting that says which readers a command sees:
// the machine's USB readers, or a bus of simulated ones (SimBus).
const SettingReaders failure.Setting = "readers"

// SimBus is a bus of simulated readers that stands for the machine's USB
// readers (Readers.Sim), so that a station can be run and tested without
// hardware: each file NAME.img in a directory is a reader, plugged in
// while the file exists, and the file is the card in its slot: the slot
// is empty while the file holds less than a block (0 bytes), and a new
// card is in when it is another file or grows from empty (a reader of
// sim.OpenSlots). Every command that enumerates readers sees these
// instead of USB's: list, N and usb: targets, --all, and --watch, which
// sees readers plugged in and out and cards taken out and put in. The
// readers are on bus 0, each at the address of its place in the
// directory's order of names (as a real bus, an address may change as
// readers come and go), its port path 0-NAME and its serial NAME, so
// usb:VID:PID:NAME names it whatever else is on the bus.
type SimBus struct {
	Dir string
	// query is the sim: options every reader takes ("?..." or "").
	query string
	cfg   sim.Config
}

// SimBusSyntax is the form of the readers setting that names a SimBus.
const SimBusSyntax = "sim:DIR[?OPTIONS]"

// simBusNumber is the bus the simulated readers are on: no USB host
// controller is bus 0.
const simBusNumber = 0

// simCardExt ends the name of a card file that is a reader.
const simCardExt = ".img"

// ParseReaders reads the readers setting: "" or "usb" is the machine's
// USB readers (nil), sim:DIR[?OPTIONS] a SimBus of the card files in DIR
// with the sim: options every reader takes (but size=, nomedium= and
// serial=, which the files give, and lun=, which a target gives).
func ParseReaders(s string) (*SimBus, error) {
	bad := func(why string) error {
		return &failure.SettingError{Setting: SettingReaders, Err: failure.Errorf(failure.Usage, "%q: %s; want usb, or %s (a directory whose files NAME%s are the readers)", s, why, SimBusSyntax, simCardExt)}
	}
	if s == "" || s == "usb" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(s, "sim:")
	if !ok {
		return nil, bad("not a set of readers")
	}
	dir, query, _ := strings.Cut(rest, "?")
	if dir == "" {
		return nil, bad("no directory")
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		if err == nil {
			err = errors.New("not a directory")
		}
		return nil, bad(err.Error())
	}
	b := &SimBus{Dir: dir}
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			key, _, _ := strings.Cut(kv, "=")
			switch key {
			case "size", "nomedium", "serial", "lun":
				return nil, bad(fmt.Sprintf("option %s= is each reader's own (its card file's size and name, a target's slot)", key))
			}
		}
		b.query = "?" + query
	}
	// The options are checked once, on a card that need not exist.
	cfg, err := sim.ReaderConfig(filepath.Join(dir, "reader"+simCardExt) + b.query)
	if err != nil {
		return nil, bad(err.Error())
	}
	b.cfg = cfg
	return b, nil
}

func (b *SimBus) String() string { return "sim:" + b.Dir + b.query }

// simPort is a reader on the bus: its name and card file.
type simPort struct {
	name, path string
	id         string // the file's identity: another file is another reader
}

// ports lists the readers plugged in now, in the order of their names.
func (b *SimBus) ports() ([]simPort, error) {
	entries, err := os.ReadDir(b.Dir)
	if err != nil {
		return nil, fmt.Errorf("the readers in %s: %w", b.Dir, err)
	}
	var ps []simPort
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), simCardExt)
		if !ok || !simReaderName(name) {
			continue
		}
		path := filepath.Join(b.Dir, e.Name())
		st, err := os.Stat(path) // through a symlink
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		ps = append(ps, simPort{name: name, path: path, id: fileID(st)})
	}
	slices.SortFunc(ps, func(a, c simPort) int { return strings.Compare(a.name, c.name) })
	return ps, nil
}

// simReaderName says whether a card file's name (less .img) names a
// reader: letters, digits, '.', '_' and '-', not first a '.' (a hidden
// file), so that it is a serial a usb: target and a sim: option take as
// it is.
func simReaderName(name string) bool {
	if name == "" || name[0] == '.' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// List is the bus's readers as the USB backend lists its own.
func (b *SimBus) List(context.Context) ([]usbdev.Info, error) {
	ps, err := b.ports()
	if err != nil {
		return nil, err
	}
	infos := make([]usbdev.Info, len(ps))
	for i, p := range ps {
		infos[i] = b.info(i, p)
	}
	return infos, nil
}

// info describes port p, the i-th on the bus, as a USB backend would: a
// mass-storage interface with the transports its options offer.
func (b *SimBus) info(i int, p simPort) usbdev.Info {
	c := b.cfg
	info := usbdev.Info{Bus: simBusNumber, Address: i + 1, Port: []int{i + 1}, PortPath: fmt.Sprintf("%d-%s", simBusNumber, p.name),
		VID: c.VID, PID: c.PID, BCDDevice: c.BCD, Manufacturer: c.Manufacturer, Product: c.Product, Serial: p.name,
		Speed: usbdev.SpeedHigh, SubClass: usbdev.SubclassSCSI, Protocol: usbdev.ProtocolBOT, Supported: true}
	if c.UAS.Mode != sim.BOTOnly {
		info.UAS = usbdev.UASSetting{Alt: 1, Command: 0x01, Status: 0x82, DataIn: 0x83, DataOut: 0x04, MaxStreams: c.UAS.Streams}
		if c.UAS.Streams > 0 {
			info.Speed = usbdev.SpeedSuper
		}
		if c.UAS.Mode == sim.UASOnly {
			info.Protocol, info.UAS.Alt = usbdev.ProtocolUAS, 0
		}
	}
	return info
}

// onBus says whether info is a reader of this bus.
func (b *SimBus) onBus(info usbdev.Info) bool {
	return info.Bus == simBusNumber && strings.HasPrefix(info.PortPath, fmt.Sprintf("%d-", simBusNumber))
}

// cardPath is the card file of the reader info lists.
func (b *SimBus) cardPath(info usbdev.Info) string {
	return filepath.Join(b.Dir, strings.TrimPrefix(info.PortPath, fmt.Sprintf("%d-", simBusNumber))+simCardExt)
}

// open opens the reader info lists, after checking that its card is not
// the image, on the transport the setting chooses.
func (b *SimBus) open(info usbdev.Info, image, setting string, o usbms.QuirkOverrides) (*sim.Device, usbms.Choice, error) {
	path := b.cardPath(info)
	if err := sameFileAsImage(image, Spec{Scheme: Sim, Raw: USBName(info), Path: path}); err != nil {
		return nil, usbms.Choice{}, err
	}
	// Its serial is its name, to the host (the USB descriptor) as in
	// the list.
	query := b.query + "&serial=" + info.Serial
	if b.query == "" {
		query = "?serial=" + info.Serial
	}
	sd, err := sim.OpenSlots(path + query)
	if errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%s: %w", path, usbdev.ErrNotFound) // unplugged since it was listed
	}
	if err != nil {
		return nil, usbms.Choice{}, err
	}
	c, err := chooseSim(sd, setting, o)
	if err != nil {
		sd.Close()
		return nil, c, err
	}
	return sd, c, nil
}

// Finder is --watch's view of the bus: every reader plugged in now, a
// card file replaced by another being another reader, each taken on the
// transport auto chooses (as USBFinder's).
func (b *SimBus) Finder() Finder {
	return func(context.Context) ([]Found, error) {
		ps, err := b.ports()
		if err != nil {
			return nil, err
		}
		out := make([]Found, 0, len(ps))
		for i, p := range ps {
			info := b.info(i, p)
			name := USBName(info)
			spec := Spec{Scheme: USB, Raw: name, LUN: -1, index: -1}
			out = append(out, Found{Key: p.path + "#" + p.id, Name: name, Info: &info, spec: spec,
				open: func(_ context.Context, image string) (usbms.Endpoint, func() error, error) {
					sd, _, err := b.open(info, image, "", usbms.QuirkOverrides{})
					if err != nil {
						return nil, nil, err
					}
					return sd, sd.Close, nil
				}})
		}
		return out, nil
	}
}
