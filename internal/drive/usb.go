package drive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/backend"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// USBName is the name of a reader in messages and the target that selects
// it: by serial when it has one (stable across ports), else by bus and
// address.
func USBName(i usbdev.Info) string {
	if i.Serial != "" {
		return fmt.Sprintf("usb:%04x:%04x:%s", i.VID, i.PID, i.Serial)
	}
	return fmt.Sprintf("usb:%d.%d", i.Bus, i.Address)
}

// Readers enumerates the USB readers once, however many targets a command
// resolves with it (Options.Readers) and whatever else it asks (ListReaders,
// KernelDiskNode). The zero value is ready; it is for one command: a
// reader plugged in later is not seen.
type Readers struct {
	// Quirks are the user's quirk overrides, for the readers list
	// describes.
	Quirks usbms.QuirkOverrides
	// Transport is the setting that chooses between Bulk-Only and UAS
	// (usbms.SettingTransport); "" is auto.
	Transport string
	// QueueDepth is how many READs or WRITEs a UAS reader gets in flight
	// at once (usbms.TransportOptions.QueueDepth); 0: the default.
	QueueDepth int

	// List is the enumeration of USB readers; nil: the backend's
	// (backend.List). A caller shows a command another machine through it
	// (one without USB access, or with other readers).
	List func(context.Context) ([]usbdev.Info, error)
	// Sim, when set, is a bus of simulated readers that the command sees
	// instead of USB's (SettingReaders): its list, its opens.
	Sim *SimBus

	// accessFn stands for the backend's access check in tests; nil: the
	// backend's (backend.Access).
	accessFn func(usbdev.Info) error

	once  sync.Once
	infos []usbdev.Info
	err   error
}

// WithTransport is r with another transport setting, sharing r's
// enumeration (bench drives a reader that offers both with each).
func (r *Readers) WithTransport(setting string) *Readers {
	return &Readers{Quirks: r.Quirks, Transport: setting, QueueDepth: r.QueueDepth, List: r.list, Sim: r.Sim, accessFn: r.accessFn}
}

// sim is the bus of simulated readers the command sees, when info is one
// of its readers; nil for a USB reader.
func (r *Readers) sim(info usbdev.Info) *SimBus {
	if r == nil || r.Sim == nil || !r.Sim.onBus(info) {
		return nil
	}
	return r.Sim
}

// Finder is where --watch looks for readers: the bus of simulated readers
// the command sees, or USB (force takes readers whose disk the system
// uses).
func (r *Readers) Finder(force bool) Finder {
	if r != nil && r.Sim != nil {
		return r.Sim.Finder()
	}
	return USBFinder(force)
}

func (r *Readers) list(ctx context.Context) ([]usbdev.Info, error) {
	r.once.Do(func() {
		list := backend.List
		switch {
		case r.Sim != nil:
			list = r.Sim.List
		case r.List != nil:
			list = r.List
		}
		r.infos, r.err = list(ctx)
	})
	return r.infos, r.err
}

// access says whether this user may open the reader info describes.
func (r *Readers) access(info usbdev.Info) error {
	if r.sim(info) != nil {
		return nil // a file this process opens: its own refusal says
	}
	if r.accessFn != nil {
		return r.accessFn(info)
	}
	return backend.Access(info)
}

// find finds the one supported reader the target selects.
func (r *Readers) find(ctx context.Context, t Spec) (usbdev.Info, error) {
	infos, err := r.list(ctx)
	if err != nil {
		return usbdev.Info{}, &Error{class: failure.Device, Target: t.Raw, Msg: fmt.Sprintf("target %s: %v", t.Raw, err), Err: err}
	}
	var match []usbdev.Info
	for i, info := range infos {
		switch {
		case t.index >= 0 && i != t.index,
			t.hasBus && (info.Bus != t.bus || info.Address != t.addr),
			t.hasVIDPID && (info.VID != t.vid || info.PID != t.pid),
			t.serial != "" && info.Serial != t.serial:
			continue
		}
		match = append(match, info)
	}
	switch {
	case len(match) == 0:
		return usbdev.Info{}, &Error{class: failure.Device, Target: t.Raw, Err: ErrNotFound,
			Msg: fmt.Sprintf("target %s: no such reader is attached (%d mass-storage interface(s) found)", t.Raw, len(infos))}
	case len(match) > 1:
		var names []string
		for _, m := range match {
			names = append(names, USBName(m))
		}
		return usbdev.Info{}, usageKind(t.Raw, ErrAmbiguous, fmt.Sprintf("target %s matches %d readers (%s)", t.Raw, len(match), strings.Join(names, ", ")))
	case !match[0].Supported:
		return usbdev.Info{}, &Error{class: failure.Device, Target: t.Raw, Err: ErrUnsupported,
			Msg: fmt.Sprintf("target %s (%s): not supported: %s", t.Raw, match[0], match[0].Reason)}
	}
	return match[0], nil
}

// Reader is one USB mass-storage interface as `usbflash list` shows it.
type Reader struct {
	Index int // in the order of `usbflash list`: the N of an N target
	Info  usbdev.Info
	Name  string // the usb: target that selects it
	// KernelDisks describe a reader the kernel holds, from sysfs: list
	// never pulls a disk away from the system.
	KernelDisks []usbdev.KernelDisk
	// Slots describe a reader the kernel does not hold: every LUN probed.
	// Their LUNs are closed: read their identity, not their blocks.
	Slots []usbms.LUNSummary
	// Err says why the reader could not be opened or probed.
	Err error
	// Access is an *AccessError when this user may not open the reader
	// (its slots were not asked); nil otherwise.
	Access error
	// Quirks are the quirk flags chosen for the reader.
	Quirks usbms.ReaderQuirks
}

// ListReaders enumerates every USB mass-storage interface and describes
// what each holds, without claiming a reader the kernel holds.
func (r *Readers) ListReaders(ctx context.Context) ([]Reader, error) {
	infos, err := r.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Reader, 0, len(infos))
	for i, info := range infos {
		out = append(out, r.describeReader(ctx, i, info))
	}
	return out, nil
}

func (rs *Readers) describeReader(ctx context.Context, index int, info usbdev.Info) Reader {
	r := Reader{Index: index, Info: info, Name: USBName(info)}
	rq, topts := usbms.ReaderSetup(nil, &info, rs.Quirks)
	r.Quirks = rq
	if !info.Supported {
		return r
	}
	// Whether it could be opened is told of a reader the kernel holds
	// too, without opening it: a write would.
	if err := asAccessError(info, rs.access(info)); errors.As(err, new(*AccessError)) {
		r.Access = err
	}
	if rs.sim(info) == nil {
		if disks, err := usbdev.KernelDisks(info); err == nil && len(disks) > 0 {
			r.KernelDisks = disks
			return r
		}
	}
	if r.Access != nil {
		return r // its identity is sysfs's; its slots cannot be asked
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	dev, closeDev, err := rs.openListed(ctx, info)
	if errors.As(err, new(*AccessError)) {
		r.Access = err
		return r
	}
	if err != nil {
		r.Err = err
		return r
	}
	defer closeDev()
	// The flags of the protocol it was opened in.
	rq, topts = usbms.ReaderSetup(dev, &info, rs.Quirks)
	r.Quirks = rq
	topts.Name = r.Name
	topts.QueueDepth = rs.QueueDepth
	r.Slots, r.Err = usbms.ProbeLUNs(ctx, usbms.NewTransport(dev, topts), usbms.LUNOptions{ReadyWait: 3 * time.Second, SpinUpWait: 3 * time.Second})
	return r
}

// openListed opens a listed reader as list does, to ask its slots: on the
// bus of simulated readers, or through the USB backend.
func (rs *Readers) openListed(ctx context.Context, info usbdev.Info) (usbms.Endpoint, func() error, error) {
	if bus := rs.sim(info); bus != nil {
		sd, _, err := bus.open(info, "", rs.Transport, rs.Quirks)
		if err != nil {
			return nil, nil, err
		}
		return sd, sd.Close, nil
	}
	ud, _, err := openChosen(ctx, info, usbdev.OpenOptions{}, rs.Transport, rs.Quirks)
	if err != nil {
		return nil, nil, err
	}
	return ud, ud.Close, nil
}

// AllWithCards is every slot of every supported reader with a card in it
// whose disk is not in use (--all), as targets; skipped names the slots
// left alone because the system uses them, with how.
func AllWithCards(readers []Reader) (ts []Spec, skipped []string) {
	for _, r := range readers {
		if !r.Info.Supported {
			continue
		}
		bus := fmt.Sprintf("usb:%d.%d", r.Info.Bus, r.Info.Address)
		add := func(lun, luns int) {
			raw := bus
			if luns > 1 {
				raw += fmt.Sprintf("/%d", lun)
			}
			if t, err := Parse(raw); err == nil {
				ts = append(ts, t)
			}
		}
		for _, d := range r.KernelDisks {
			if d.Size == 0 {
				continue
			}
			if len(d.InUse) > 0 {
				var uses []string
				for _, u := range d.InUse {
					uses = append(uses, u.String())
				}
				skipped = append(skipped, fmt.Sprintf("%s/%d (%s)", r.Name, d.LUN, strings.Join(uses, ", ")))
				continue
			}
			add(d.LUN, len(r.KernelDisks))
		}
		for _, s := range r.Slots {
			if s.LUN != nil {
				add(s.Number, len(r.Slots))
			}
		}
	}
	return ts, skipped
}

// KernelDiskNode is the block device the kernel made for the usb: reader t
// names (its LUN, when t gives one), which sysfs shows while usb-storage
// still has the interface: what `bench --compare` reads through the
// kernel.
func (r *Readers) KernelDiskNode(ctx context.Context, t Spec) (string, error) {
	if t.Scheme != USB {
		return "", kernelDiskErr(t, ErrNotUSB, "not a usb: reader, the only target with a kernel disk to find")
	}
	info, err := r.find(ctx, t)
	if err != nil {
		return "", err
	}
	if r.sim(info) != nil {
		return "", kernelDiskErr(t, ErrNoKernelDisk, "a simulated reader, which the kernel has no disk for")
	}
	disks, err := usbdev.KernelDisks(info)
	if err != nil {
		return "", &Error{class: failure.Device, Target: t.Raw, Msg: fmt.Sprintf("the kernel disks of %s: %v", t.Raw, err), Err: err}
	}
	var match []usbdev.KernelDisk
	for _, d := range disks {
		if t.LUN < 0 || d.LUN == t.LUN {
			match = append(match, d)
		}
	}
	switch {
	case len(match) == 0:
		return "", kernelDiskErr(t, ErrNoKernelDisk, "the kernel has no disk for it (usb-storage is not bound to it, or it was already taken)")
	case len(match) > 1:
		var nodes []string
		for _, d := range match {
			nodes = append(nodes, fmt.Sprintf("%s (LUN %d)", d.Node, d.LUN))
		}
		return "", kernelDiskErr(t, ErrKernelDisks, fmt.Sprintf("several kernel disks (%s)", strings.Join(nodes, ", ")))
	case match[0].Size == 0:
		return "", kernelDiskErr(t, nil, fmt.Sprintf("%s has no medium in the kernel's view", match[0].Node))
	}
	return match[0].Node, nil
}

// kernelDiskErr is a kernel disk that cannot be found for t, of kind
// (nil: no kind of its own), what saying why: a mistake in the setting
// that asked for it.
func kernelDiskErr(t Spec, kind error, what string) error {
	return &failure.SettingError{Setting: SettingKernelDisk,
		Err: &Error{class: failure.Usage, Target: t.Raw, Msg: t.Raw + ": " + what, Err: kind}}
}

// transport is the Transport setting; "" (auto) without Readers.
func (r *Readers) transport() string {
	if r == nil {
		return ""
	}
	return r.Transport
}

// queueDepth is the QueueDepth setting; 0 (the default) without Readers.
func (r *Readers) queueDepth() int {
	if r == nil {
		return 0
	}
	return r.QueueDepth
}

// openChosen opens a listed reader on the transport the setting chooses
// (usbms.ChooseTransport): UAS, or Bulk-Only. Auto falls back to
// Bulk-Only, where the reader has it, when the host controller gives UAS
// no scatter-gather, or no streams at SuperSpeed.
func openChosen(ctx context.Context, info usbdev.Info, opts usbdev.OpenOptions, setting string, o usbms.QuirkOverrides) (backend.Device, usbms.Choice, error) {
	c, err := usbms.ChooseTransport(setting, usbms.OfferOf(info, o))
	if err != nil {
		return nil, c, err
	}
	opts.UAS = c.UAS
	d, err := backend.Open(ctx, info, opts)
	if err != nil && c.UAS && setting != usbms.TransportUAS && info.HasBOT() && errors.Is(err, usbdev.ErrNoStreams) {
		opts.UAS = false
		c = usbms.Choice{Why: "the host controller gives UAS no scatter-gather or no bulk streams"}
		d, err = backend.Open(ctx, info, opts)
	}
	return d, c, asAccessError(info, err)
}
