package drive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/lib/flock"
	"github.com/usbflash/usbflash/internal/lib/linuxdisk"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// Options are the safety choices the user made on the command line.
type Options struct {
	// Force takes a disk the system uses (mounted, swap, held).
	Force bool
	// NewFileSize is the size a file: target that does not exist yet is
	// created with when the target gives none (the image's size in whole
	// blocks). 0: a missing file is an error.
	NewFileSize int64
	// ReadOnly: the command only reads the target (verify, info, read).
	ReadOnly bool
	// AllowNoMedium: an empty slot is opened for its identity alone
	// (info); the Device's Dev then has no blocks and is an EmptySlot.
	AllowNoMedium bool
	// Image is the image the command writes; the target must be neither
	// it nor the disk it lies on. "" when there is none, "-" for standard
	// input.
	Image string
	// OnRecovery is told each step of a reader's recovery ladder, with the
	// name of the reader.
	OnRecovery func(reader, step string)
	// OnNotice, when set, is told every notice of a reader (its recovery
	// steps, and a transfer size lowered because the reader failed larger
	// commands) instead of OnRecovery, in observe's words, with the
	// reader's VID:PID in Notice.USBID.
	OnNotice func(reader string, n observe.Notice)
	// Quirks are the user's quirk overrides (usbms.HostQuirkOverrides).
	Quirks usbms.QuirkOverrides
	// Readers is the command's enumeration of USB readers, shared with what
	// else it asked; nil: enumerate for this call.
	Readers *Readers
}

// Device is one opened target, ready for block I/O: a LUN of a real or
// simulated reader, or a file. Hand Dev itself to the engine (it carries
// the optional interfaces the engine looks for); what the target is
// besides its blocks (its reader's USB identity and quirks, its SCSI
// facts, the kernel's disks, a file's direct I/O) are optional facts of
// Dev too, asked for with a type assertion on the interfaces in facts.go.
type Device struct {
	Name string          // the target as messages name it once open (sim:card.img/1)
	Dev  blockdev.Device // an EmptySlot of no blocks for an empty slot opened with AllowNoMedium

	// InUse: a disk opened ReadOnly that the system uses (mounted, active
	// swap, held), which a write would refuse: the refusal a write gets
	// (Refused, ErrInUse, Uses), as a fact to report. nil otherwise.
	InUse error

	closer func() error
	// node is the file or disk node that holds the target's blocks
	// outside usbflash ("" for a reader's slot but a simulated card's
	// first): Node's.
	node string
	// created is the file this run created for the target ("" when it
	// existed): Close removes it unless the write began (Keep), so a
	// refused write leaves nothing behind.
	created string
	kept    bool
}

// overrides are the quirk overrides in force: Quirks, else the Readers'.
func (o Options) overrides(readers *Readers) usbms.QuirkOverrides {
	if o.Quirks == (usbms.QuirkOverrides{}) && readers != nil {
		return readers.Quirks
	}
	return o.Quirks
}

// Keep records that writing began: a target this run created stays.
func (d *Device) Keep() { d.kept = true }

// Close lets go of the target (the reader's interface goes back to the
// kernel driver) and removes a file this run created and never wrote.
func (d *Device) Close() error {
	var err error
	if d.closer != nil {
		err = d.closer()
	}
	if d.created != "" && !d.kept {
		if rerr := os.Remove(d.created); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// Node is where a program other than usbflash reaches the target's blocks
// (dd of=NODE): a file: target's file, a disk: target's node, a
// simulated card's file; of a usb: slot, the disk the kernel had made of
// it before usbflash claimed the reader (claimed: it comes back when the
// reader is let go, usually under that name). "" when none is known.
func (d *Device) Node() (node string, claimed bool) {
	if d.node != "" {
		return d.node, false
	}
	k, ok := d.Dev.(KernelDisks)
	s, isSCSI := d.Dev.(SCSI)
	if !ok || !isSCSI {
		return "", false
	}
	for _, disk := range k.KernelDisks() {
		if disk.LUN == s.SCSI().Number() {
			return disk.Node, true
		}
	}
	return "", false
}

// Capacity is the medium's size in bytes (0 for an empty slot).
func (d *Device) Capacity() int64 { return blockdev.Capacity(d.Dev) }

// ErrNotEjectable: the target has no medium to eject (a file, a Linux
// disk: target).
var ErrNotEjectable = errors.New("the target has no card to eject")

// NotEjectableError is ErrNotEjectable of one target: What says what it
// is ("a file: target", "a disk: target on Linux").
type NotEjectableError struct{ What string }

func (e *NotEjectableError) Error() string { return e.What + " has no card to eject" }

// Is makes it ErrNotEjectable.
func (e *NotEjectableError) Is(err error) bool { return err == ErrNotEjectable }

// Eject ejects the card (START STOP UNIT; for a disk: target the
// system's eject); a *NotEjectableError for a target without one.
func (d *Device) Eject(ctx context.Context) error {
	e, ok := d.Dev.(blockdev.Ejector)
	if !ok {
		what := "a file: target"
		if n, ok := d.Dev.(interface{ notEjectable() string }); ok {
			what = n.notEjectable()
		}
		return &NotEjectableError{What: what}
	}
	return e.Eject(ctx)
}

// Open opens t for block I/O. Nothing is written; a usb: reader's
// interface is claimed (and the kernel driver detached) only after the
// in-use check.
func Open(ctx context.Context, t Spec, opts Options) (*Device, error) {
	ds, errs := OpenAll(ctx, []Spec{t}, opts)
	return ds[0], errs[0]
}

// OpenAll opens several targets, each with its own device or error, in
// the order given. USB is enumerated once; targets that are slots of one
// reader share one open of it (its interface can be claimed only once);
// readers open in parallel, so one that does not answer delays no other.
func OpenAll(ctx context.Context, ts []Spec, opts Options) ([]*Device, []error) {
	ds, errs := make([]*Device, len(ts)), make([]error, len(ts))
	readers := opts.Readers
	if readers == nil {
		readers = &Readers{}
	}
	groups := map[string][]int{}
	var order []string
	for i, t := range ts {
		key, err := readerKey(ctx, readers, t)
		if err != nil {
			errs[i] = err
			continue
		}
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	var wg sync.WaitGroup
	for _, key := range order {
		idx := groups[key]
		wg.Add(1)
		go func() {
			defer wg.Done()
			group := make([]Spec, len(idx))
			for j, i := range idx {
				group[j] = ts[i]
			}
			gd, gerr := openReader(ctx, readers, group, opts)
			for j, i := range idx {
				ds[i], errs[i] = gd[j], gerr[j]
			}
		}()
	}
	wg.Wait()
	return ds, errs
}

// readerKey names the reader a target lives on, so slots of one reader
// can share it; file: and disk: targets share nothing.
func readerKey(ctx context.Context, readers *Readers, t Spec) (string, error) {
	switch t.Scheme {
	case USB:
		info, err := readers.find(ctx, t)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("usb:%d.%d", info.Bus, info.Address), nil
	case Sim:
		abs, err := filepath.Abs(t.Path)
		if err != nil {
			return "", usageErr(t.Raw, fmt.Sprintf("target %s: %v", t.Raw, err))
		}
		return "sim:" + abs, nil
	}
	return t.Raw, nil // a file or a disk: each its own
}

// openReader opens the targets of one reader (or one file): each gets its
// own device or error.
func openReader(ctx context.Context, readers *Readers, group []Spec, opts Options) ([]*Device, []error) {
	ds, errs := make([]*Device, len(group)), make([]error, len(group))
	failAll := func(err error) ([]*Device, []error) {
		for i := range errs {
			errs[i] = err
		}
		return ds, errs
	}
	t0 := group[0]
	if len(group) > 1 {
		for _, t := range group {
			if t.LUN < 0 {
				return failAll(usageKind(t.Raw, ErrSameReader, fmt.Sprintf("targets %s and %s are the same reader, and not each a slot of it", t0.Raw, group[1].Raw)))
			}
		}
	}
	switch t0.Scheme {
	case File:
		ds[0], errs[0] = openFile(t0, opts)
		return ds, errs
	case Disk:
		ds[0], errs[0] = openDisk(ctx, t0, opts)
		return ds, errs
	}
	// A sim: card that does not exist yet is created by the simulator: a
	// refused run removes it again.
	created := ""
	if _, err := os.Stat(t0.Path); t0.Scheme == Sim && errors.Is(err, fs.ErrNotExist) {
		created = t0.Path
		defer func() {
			if ds[0] == nil && len(group) == 1 {
				os.Remove(created)
			}
		}()
	}
	e, err := openEndpoint(ctx, readers, t0, opts)
	if err != nil {
		return failAll(err)
	}
	ep, closeEP, info, name := e.ep, e.close, e.info, e.name
	rq, topts := usbms.ReaderSetup(ep, info, opts.overrides(readers))
	topts.Quirks |= e.choice.Quirks
	topts.UASPassedOver, topts.BothOffered = e.choice.Why, e.choice.Both
	topts.QueueDepth = readers.queueDepth()
	topts.Name = name
	usbID := usbms.ReaderID(ep, info)
	switch {
	case opts.OnNotice != nil:
		topts.OnNotice = func(n usbms.Notice) { opts.OnNotice(name, noticeOf(n, usbID)) }
	case opts.OnRecovery != nil:
		topts.OnRecovery = func(step string) { opts.OnRecovery(name, step) }
	}
	tr := usbms.NewTransport(ep, topts)
	// The reader closes with its last slot.
	var mu sync.Mutex
	open := len(group)
	release := func() error {
		mu.Lock()
		defer mu.Unlock()
		if open--; open == 0 {
			return closeEP()
		}
		return nil
	}
	rd := readerOf(ep, info, e.disks, rq)
	for i, t := range group {
		ds[i], errs[i] = openSlot(ctx, t, name, tr, rd, release, opts)
	}
	// A card made for a read-only command (size= names it) stays: it is
	// the card the user asked for, blank. One made for a write goes again
	// unless the write began (Keep).
	if ds[0] != nil && len(group) == 1 && !opts.ReadOnly {
		ds[0].created = created
	}
	return ds, errs
}

// endpoint is an opened reader: its endpoint and how to let it go, its
// descriptors (nil for the simulator), the kernel's disks of it as the
// open read them before claiming it, its name, and the transport chosen.
type endpoint struct {
	ep     usbms.Endpoint
	close  func() error
	info   *usbdev.Info
	disks  []usbdev.KernelDisk
	name   string
	choice usbms.Choice
}

// openEndpoint opens the reader a usb: or sim: target names, after
// checking that it is not the disk the image lies on, on the transport
// the setting chooses.
func openEndpoint(ctx context.Context, readers *Readers, t Spec, opts Options) (endpoint, error) {
	if t.Scheme == USB {
		info, err := readers.find(ctx, t)
		if err != nil {
			return endpoint{}, err
		}
		if bus := readers.sim(info); bus != nil {
			sd, c, err := bus.open(info, opts.Image, readers.transport(), opts.overrides(readers))
			if err != nil {
				return endpoint{choice: c}, openError(t, err)
			}
			return endpoint{ep: sd, close: sd.Close, info: &info, name: USBName(info), choice: c}, nil
		}
		// The image check runs before the claim, which takes the disk
		// from under the image, on the disks the in-use check reads;
		// they are kept as the reader's KernelDisks.
		onReader := imageOnReader(opts.Image, t)
		var disks []usbdev.KernelDisk
		ud, c, err := openChosen(ctx, info, usbdev.OpenOptions{Force: opts.Force, CheckDisks: func(d []usbdev.KernelDisk) error {
			disks = d
			return onReader(d)
		}}, readers.transport(), opts.overrides(readers))
		if err != nil {
			return endpoint{choice: c}, openError(t, err)
		}
		return endpoint{ep: ud, close: ud.Close, info: &info, disks: disks, name: USBName(info), choice: c}, nil
	}
	if err := sameFileAsImage(opts.Image, t); err != nil {
		return endpoint{}, err
	}
	open := sim.Open
	if opts.ReadOnly {
		open = sim.OpenReadOnly
	}
	sd, err := open(t.spec)
	if err != nil {
		return endpoint{}, openError(t, err)
	}
	c, err := chooseSim(sd, readers.transport(), opts.overrides(readers))
	if err != nil {
		sd.Close()
		return endpoint{choice: c}, openError(t, err)
	}
	return endpoint{ep: sd, close: sd.Close, name: "sim:" + t.Path, choice: c}, nil
}

// chooseSim selects a simulated reader's transport as openChosen does a
// real one's: a sim reader with UAS is taken for a SuperSpeed one when it
// has streams, for a high-speed one when not.
func chooseSim(sd *sim.Device, setting string, o usbms.QuirkOverrides) (usbms.Choice, error) {
	vid, pid, bcd := sd.USBID()
	_, streams := sd.UASMode()
	offer := usbms.Offer{BOT: sd.Offers() != sim.UASOnly, UAS: sd.Offers() != sim.BOTOnly, VID: vid, PID: pid,
		Speed: usbdev.SpeedHigh, MaxStreams: streams, Quirks: usbms.ResolveQuirks(vid, pid, bcd, o, sd.Quirks()).Flags,
		UASQuirks: usbms.ResolveUASQuirks(vid, pid, bcd, o, sd.Quirks()).Flags}
	if streams > 0 {
		offer.Speed = usbdev.SpeedSuper
	}
	c, err := usbms.ChooseTransport(setting, offer)
	if err != nil {
		return c, err
	}
	if offer.UAS {
		if err := sd.SelectUAS(c.UAS); err != nil {
			return c, err
		}
	}
	return c, nil
}

// openFile opens a file: target, creating it when it does not exist (and
// removing it again when the run is refused).
func openFile(t Spec, opts Options) (*Device, error) {
	if err := sameFileAsImage(opts.Image, t); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(t.Path)
	missing := errors.Is(statErr, fs.ErrNotExist)
	size := t.fileSize
	if size == 0 && missing && !opts.ReadOnly {
		size = opts.NewFileSize
		if size == 0 {
			return nil, usageKind(t.Raw, ErrNeedsSize, fmt.Sprintf("target %s does not exist and the image's size is not known in advance", t.Raw))
		}
	}
	f, err := filedev.Open(t.Path, filedev.Options{Force: opts.Force, Size: size, ReadOnly: opts.ReadOnly})
	if err != nil {
		if missing {
			os.Remove(t.Path) // this run created it and was refused: leave nothing
		}
		return nil, openError(t, err)
	}
	d := &Device{Name: "file:" + t.Path, Dev: f, closer: f.Close, node: t.Path}
	if err := f.InUse(); err != nil {
		d.InUse = &Error{class: failure.Refused, Target: t.Raw, Msg: err.Error(), Uses: uses(err), Err: err}
	}
	if missing {
		d.created = t.Path
	}
	return d, nil
}

// openError sorts why a target could not be opened, in one place for
// every kind of target: the system uses it or another run holds it
// (refused), the target cannot be one (usage), or the device failed.
func openError(t Spec, err error) error {
	var (
		spec    *sim.SpecError
		card    *sim.CardError
		refused *Error
		setting *failure.SettingError
	)
	switch {
	case errors.As(err, &refused):
		return err // this package's own check (the image on the reader's disk), sorted already
	case errors.As(err, &setting):
		// A transport the reader does not offer: the setting's to fix.
		return &Error{class: failure.Usage, Target: t.Raw, Msg: fmt.Sprintf("target %s: %v", t.Raw, err), Err: err}
	case errors.Is(err, linuxdisk.ErrInUse):
		return &Error{class: failure.Refused, Target: t.Raw, Msg: fmt.Sprintf("%v; nothing was written", err), Uses: uses(err), Err: err}
	case errors.Is(err, linuxdisk.ErrInUseUnknown):
		return &Error{class: failure.Refused, Target: t.Raw, Msg: fmt.Sprintf("%v; nothing was written", err), Err: err}
	case errors.Is(err, flock.ErrLocked), errors.Is(err, usbdev.ErrBusy):
		return &Error{class: failure.Refused, Target: t.Raw, Msg: fmt.Sprintf("target %s is in use by another usbflash (or another program); nothing was written", t.Raw), Err: errors.Join(ErrBusy, err)}
	case errors.Is(err, filedev.ErrBadTarget):
		return &Error{class: failure.Usage, Target: t.Raw, Msg: err.Error(), Err: err}
	case t.Scheme == Sim:
		// The simulator names the card as its spec; say it once, as typed.
		msg := fmt.Sprintf("target %s: %s", t.Raw, strings.TrimPrefix(err.Error(), fmt.Sprintf("sim: target %q: ", t.spec)))
		if errors.As(err, &spec) || errors.As(err, &card) {
			// What the target asks for cannot be (its options, the card
			// file's size): the command line's to fix.
			return &Error{class: failure.Usage, Target: t.Raw, Msg: msg, Err: err}
		}
		// The card file could not be opened or read: the simulated card
		// failed, as a real one would.
		return &Error{class: failure.Device, Target: t.Raw, Msg: msg, Err: err}
	}
	return &Error{class: failure.Device, Target: t.Raw, Msg: err.Error(), Err: err}
}

// uses says how the system uses a disk, from linuxdisk's error.
func uses(err error) []Use {
	var e *linuxdisk.InUseError
	if !errors.As(err, &e) {
		return nil
	}
	kinds := map[linuxdisk.UseKind]Use{linuxdisk.Mounted: UseMounted, linuxdisk.Swap: UseSwap, linuxdisk.Held: UseHeld}
	seen := map[Use]bool{}
	var out []Use
	for _, u := range e.Uses {
		if k, ok := kinds[u.Kind]; ok && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// sameFileAsImage refuses a file: or sim: target that is the image itself
// (the same file through any path, hard link or symlink) or the disk the
// image lies on (a block device, with its partitions): writing would
// destroy the image while it is read. A usb: reader's disks are checked by
// imageOnReader, in the backend's open. The image "-" is standard input,
// which may be the target redirected.
func sameFileAsImage(image string, t Spec) error {
	img, ok := statImage(image)
	if !ok {
		return nil
	}
	tgt, err := os.Stat(t.Path)
	if err != nil {
		return nil // a target that does not exist yet is no image
	}
	if os.SameFile(img, tgt) {
		return refuseImage(t, fmt.Sprintf("is the image %s", image))
	}
	_, tgtDev, ok := linuxdisk.FileDevs(tgt)
	if !ok || tgt.Mode()&fs.ModeDevice == 0 || tgt.Mode()&fs.ModeCharDevice != 0 {
		return nil
	}
	devs := []string{tgtDev}
	if disk, err := linuxdisk.Host().BlockDevice(tgtDev); err == nil {
		devs = disk.Devs
	}
	return imageOnDevs(image, img, t, devs)
}

// imageOnReader is the check a USB backend runs on the disks the kernel
// made from the reader t names, right before its claim takes them
// (usbdev.OpenOptions.CheckDisks, with the disks it reads for the in-use
// check): it refuses the reader when one of them, or of their partitions,
// holds the filesystem the image lies on.
func imageOnReader(image string, t Spec) func([]usbdev.KernelDisk) error {
	return func(disks []usbdev.KernelDisk) error {
		img, ok := statImage(image)
		if !ok {
			return nil
		}
		var devs []string
		for _, d := range disks {
			devs = append(devs, d.Devs...)
		}
		return imageOnDevs(image, img, t, devs)
	}
}

// statImage describes the image file ("-": standard input); false when
// there is none to protect, or it cannot be read (its own open says so).
func statImage(image string) (fs.FileInfo, bool) {
	if image == "" {
		return nil, false
	}
	var img fs.FileInfo
	var err error
	if image == "-" {
		img, err = os.Stdin.Stat()
	} else {
		img, err = os.Stat(image)
	}
	return img, err == nil
}

// imageOnDevs refuses target t when devs (the target disk and its
// partitions, "major:minor") hold the filesystem the image lies on.
func imageOnDevs(image string, img fs.FileInfo, t Spec, devs []string) error {
	imgDev, _, ok := linuxdisk.FileDevs(img)
	if !ok {
		return nil
	}
	for _, d := range devs {
		if d == imgDev {
			return refuseImage(t, fmt.Sprintf("holds the filesystem the image %s lies on", image))
		}
	}
	return nil
}

// refuseImage is the refusal of a target that is, or holds, the image.
func refuseImage(t Spec, why string) error {
	return &Error{class: failure.Refused, Target: t.Raw, Err: ErrIsImage,
		Msg: fmt.Sprintf("target %s %s: refusing to overwrite the image while reading it; nothing was written", t.Raw, why)}
}

// openSlot opens the LUN t names over a transport that may serve other
// LUNs of the same reader too; closeEP is called when the device closes or
// fails to open. A reader with several LUNs and no /LUN in the target is
// accepted only when exactly one slot has a card.
func openSlot(ctx context.Context, t Spec, name string, tr *usbms.Transport, rd slotMaker, closeEP func() error, opts Options) (*Device, error) {
	fail := func(err error) (*Device, error) {
		closeEP()
		return nil, err
	}
	var slot usbms.LUNSummary
	if t.LUN >= 0 {
		maxLUN, err := tr.MaxLUN(ctx)
		if err != nil {
			return fail(&Error{class: failure.Device, Target: t.Raw, Msg: fmt.Sprintf("%s: asking for the number of LUNs: %v", name, err), Err: err})
		}
		if t.LUN > maxLUN {
			return fail(usageErr(t.Raw, fmt.Sprintf("%s has LUNs 0 to %d, not %d", name, maxLUN, t.LUN)))
		}
		slot = usbms.ProbeLUN(ctx, tr, t.LUN, usbms.LUNOptions{})
		if maxLUN > 0 {
			reader := name
			name = fmt.Sprintf("%s/%d", name, t.LUN)
			if slot.LUN != nil && !opts.ReadOnly {
				if err := checkOwnMedium(ctx, tr, reader, slot.LUN, maxLUN, opts); err != nil {
					return fail(err)
				}
			}
		}
	} else {
		slots, err := usbms.ProbeLUNs(ctx, tr, usbms.LUNOptions{})
		if err != nil {
			return fail(&Error{class: failure.Device, Target: t.Raw, Msg: err.Error(), Err: err})
		}
		if slot, err = onlyLoadedLUN(t, name, slots); err != nil {
			return fail(err)
		}
		if len(slots) > 1 {
			name = fmt.Sprintf("%s/%d", name, slot.Number)
		}
	}
	d := &Device{Name: name, closer: closeEP}
	if t.Scheme == Sim && slot.Number == 0 {
		d.node = t.Path // the card file; other slots' are the simulator's
	}
	switch {
	case slot.LUN != nil:
		d.Dev = rd.lun(slot.LUN)
	case slot.NoMedium && opts.AllowNoMedium:
		d.Dev = rd.empty(slot)
	default:
		return fail(slot.Err)
	}
	return d, nil
}

// onlyLoadedLUN picks the slot of a reader the target means without a
// /LUN: the only one, or the single slot that has a card.
func onlyLoadedLUN(t Spec, name string, slots []usbms.LUNSummary) (usbms.LUNSummary, error) {
	if len(slots) == 1 {
		return slots[0], nil
	}
	var loaded []usbms.LUNSummary
	for _, s := range slots {
		if s.LUN != nil {
			loaded = append(loaded, s)
		}
	}
	if len(loaded) == 1 {
		return loaded[0], nil
	}
	return usbms.LUNSummary{}, usageKind(t.Raw, ErrWhichSlot, fmt.Sprintf("%s has %d LUNs (slots), %d with a card; the first is %s", name, len(slots), len(loaded), withLUN(t, 0)))
}

// withLUN is the target t with slot n chosen, in a form that can be typed
// back in.
func withLUN(t Spec, n int) string {
	if t.Scheme == Sim {
		sep := "?"
		if strings.Contains(t.Raw, "?") {
			sep = "&"
		}
		return fmt.Sprintf("%s%slun=%d", t.Raw, sep, n)
	}
	return fmt.Sprintf("%s/%d", t.Raw, n)
}
