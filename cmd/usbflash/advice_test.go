package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/testkit/factsonly"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/diskdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// adviceCase is one kind of error, as it reaches the CLI, and the one
// piece of advice hint() must give for it.
type adviceCase struct {
	kind   string
	err    error
	advice string
}

// TestAdviceTable: every kind of error the libraries report gets exactly
// one piece of advice, from hint()'s table, and the message it comes with
// gives none: the advice is printed once, on its own line.
func TestAdviceTable(t *testing.T) {
	t.Parallel()
	var cases []adviceCase
	cases = append(cases, usbAdviceCases()...)
	cases = append(cases, mediumAdviceCases(t)...)
	cases = append(cases, imageAdviceCases(t)...)
	cases = append(cases, targetAdviceCases(t)...)
	cases = append(cases, cardAdviceCases(t)...)
	cases = append(cases, pipelineAdviceCases()...)
	cases = append(cases, driveAdviceCases(t)...)
	cases = append(cases, benchAdviceCases(t)...)
	cases = append(cases, outputAdviceCases()...)
	cases = append(cases, urlAdviceCases()...)
	cases = append(cases, customizeAdviceCases()...)
	cases = append(cases, trustAdviceCases()...)
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			msg, advice := explain(c.err)
			if advice != c.advice {
				t.Errorf("advice %q\nwant   %q", advice, c.advice)
			}
			if advice == "" {
				t.Fatalf("no advice for %v", c.err)
			}
			if words := factsonly.Advice(msg); len(words) > 0 {
				t.Errorf("message %q gives advice %q besides the table's", msg, words)
			}
			if strings.Contains(strings.ToLower(msg), strings.ToLower(advice)) {
				t.Errorf("message %q repeats the advice", msg)
			}
			var out bytes.Buffer
			termui.PrintError(&out, newErrorEvent(c.err, exitCode(c.err)))
			if want := "usbflash: " + msg + "\n" + termui.Sentence(advice) + "\n"; out.String() != want {
				t.Errorf("printed\n%q\nwant\n%q", out.String(), want)
			}
			// The event a script reads says the same, apart.
			if e := newErrorEvent(c.err, exitCode(c.err)); e.Message != msg || e.Hint != advice {
				t.Errorf("error event %q, %q", e.Message, e.Hint)
			}
		})
	}
}

// usbAdviceCases has a case for every kind libusb reports, alone and
// under the layers that wrap it: the USB kind's advice wins.
func usbAdviceCases() []adviceCase {
	usbErr := func(kind error) error {
		return &usbdev.Error{Op: "bulk OUT transfer of 1048576 bytes", Device: `46f4:0001 "QEMU USB HARDDRIVE" (bus 1 address 5, port 1-2)`,
			Kind: kind, Err: errors.New("libusb: some failure [code -99]"), VID: 0x46f4, Port: "1-2", DevNode: "/dev/bus/usb/001/005"}
	}
	kinds := []struct {
		name   string
		kind   error
		advice string
	}{
		{"usb/no USB support", usbdev.ErrNoUSBSupport, "build usbflash with a USB backend: make build (on Linux pure Go, no library needed; elsewhere cgo and libusb-1.0); sim:, file: and disk: targets still work"},
		{"usb/no USB access", usbdev.ErrNoUSBAccess, "give this container or VM USB passthrough, or run usbflash on the host; sim:, file: and disk: targets still work"},
		{"usb/permission", usbdev.ErrPermission, installAdvice},
		{"usb/busy", usbdev.ErrBusy, "close other programs using it (another usbflash, a VM with USB passthrough); if the kernel driver holds it, unmount its partitions and retry"},
		{"usb/not found", usbdev.ErrNotFound, "it was unplugged or re-enumerated; run `usbflash list` again"},
		{"usb/device changed", usbdev.ErrDeviceChanged, "run `usbflash list` again and choose the reader you mean"},
		{"usb/descriptors changed", usbdev.ErrDescriptorsChanged, "run `usbflash list` again"},
		{"usb/re-enumeration lost", usbdev.ErrReenumerationLost, "unplug the reader and plug it in again"},
		{"usb/no memory", usbdev.ErrNoMemory, "use a smaller --transfer-size or fewer --buffers, or raise the limit in /sys/module/usbcore/parameters/usbfs_memory_mb (16 MiB by default)"},
		{"usb/overflow", usbdev.ErrOverflow, "its state is unknown: unplug the reader, plug it in again, and run the command again"},
		{"usb/list failed", usbdev.ErrListFailed, "check that /sys/bus/usb and /dev/bus/usb are readable"},
		{"usb/reattach failed", usbdev.ErrReattachFailed, "unplug and replug the reader to get its /dev/sdX node back"},
		{"usb/in-use check failed", usbdev.ErrInUseUnknown, "pass --force to skip this check if you are sure nothing uses the disk"},
		{"usb/closed", usbdev.ErrClosed, "usbflash used a device it had closed, which is a bug: please report it"},
		{"usb/gone", usbms.ErrNoDevice, "reconnect the reader and run the command again"},
	}
	var cases []adviceCase
	for _, k := range kinds {
		cases = append(cases, adviceCase{k.name, usbErr(k.kind), k.advice})
		if k.kind == usbdev.ErrNoUSBSupport || k.kind == usbdev.ErrNoUSBAccess {
			cases = append(cases, adviceCase{k.name + ", bare", fmt.Errorf("listing USB devices: %w", k.kind), k.advice})
			continue
		}
		if k.kind == usbdev.ErrInUseUnknown {
			continue // the open's check, a refusal: never under a write
		}
		// As a write sees it: the block command failed through the whole
		// recovery ladder, and the pipeline says where.
		ladder := &usbms.CommandError{Op: "WRITE(10)", Device: "usb:1-2", LBA: 2048, Blocks: 2048,
			Err: fmt.Errorf("%w after 2 resets and 1 port resets: %w", usbms.ErrRecoveryFailed, usbErr(k.kind))}
		cases = append(cases, adviceCase{k.name + ", under a failed write", &pipeline.DeviceError{Device: "usb:1-2",
			Op: pipeline.OpWrite, LBA: 2048, Count: 2048, BlockSize: 512, Err: ladder}, k.advice})
	}
	// A reader this user may not open, as drive says it: what would give
	// access follows from the rule installed here.
	access := func(rule, group string) error {
		return &drive.AccessError{Reader: "usb:46f4:0001:E2E", Node: "/dev/bus/usb/001/005", Rule: rule, Group: group, Err: usbErr(usbdev.ErrPermission)}
	}
	return append(cases,
		adviceCase{"usb/permission, no rule installed", access("", ""), installAdvice},
		adviceCase{"usb/permission, the seat's variant alone", access("/etc/udev/rules.d/70-usbflash.rules", ""),
			"/etc/udev/rules.d/70-usbflash.rules opens readers to the user at the seat (a local login) only: over ssh or on a station without a seat, enable its group rule (its comments say how), or run with sudo"},
		adviceCase{"usb/permission, the package's rule", access("/usr/lib/udev/rules.d/70-usbflash.rules", "usbflash"),
			"/usr/lib/udev/rules.d/70-usbflash.rules opens readers to the group usbflash: an administrator adds you to it (sudo usermod -aG usbflash $USER, then log in again), or run with sudo"},
	)
}

// installAdvice is for a reader this user may not open where usbflash's
// udev rule is not installed.
const installAdvice = "install usbflash's package: its udev rule (70-usbflash.rules) opens readers to the group usbflash, which an administrator adds users to; or run with sudo"

// mediumAdviceCases makes the medium's conditions the way a reader reports
// them, through the simulated reader.
func mediumAdviceCases(t *testing.T) []adviceCase {
	ctx := context.Background()
	opts := usbms.LUNOptions{RetryBackoff: time.Millisecond, ReadyWait: 20 * time.Millisecond}
	open := func(lun sim.LUN) (*sim.Device, *usbms.LUN, error) {
		dev, err := sim.New(sim.Config{LUNs: []sim.LUN{lun}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Close() })
		l, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim:card.img"}), 0, opts)
		return dev, l, err
	}
	write := func(fault sim.Fault, before bool) error {
		dev, l, err := open(sim.LUN{Blocks: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if before {
			if err := l.WriteBlocks(ctx, 0, make([]byte, 8*512)); err != nil {
				t.Fatal(err)
			}
		}
		dev.Inject(fault)
		err = l.WriteBlocks(ctx, 8, make([]byte, 8*512))
		if err == nil {
			t.Fatalf("a write with fault %v succeeded", fault.Kind)
		}
		return err
	}
	_, _, noMedium := open(sim.LUN{NoMedium: true})
	if noMedium == nil {
		t.Fatal("an empty slot opened")
	}
	asWrite := func(err error) error {
		return &pipeline.DeviceError{Device: "sim:card.img", Op: pipeline.OpWrite, LBA: 8, Count: 8, BlockSize: 512, Err: err}
	}
	medium := write(sim.Fault{Kind: sim.MediumError, LBA: 10, Persistent: true}, false)
	swapped := write(sim.Fault{Kind: sim.UnitAttention}, true)
	notReady := write(sim.Fault{Kind: sim.NotReady, Persistent: true}, false)
	// A reader that reports the block count for the last LBA, read to the
	// end.
	dev, err := sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 4096}}, Misbehaviour: sim.Misbehaviour{CapacityOffByOne: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	l, err := usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim:card.img"}), 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	phantom := l.ReadBlocks(ctx, 4096, make([]byte, 512))
	asRead := &pipeline.DeviceError{Device: "sim:card.img", Op: pipeline.OpRead, LBA: 4096, Count: 1, BlockSize: 512, Err: phantom}
	// A reader that fails the first two READ(10)s after a card goes in:
	// the one of block 0 at open, and the first one after.
	dev, err = sim.New(sim.Config{LUNs: []sim.LUN{{Blocks: 4096}}, Misbehaviour: sim.Misbehaviour{InitialRead10: 2}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if l, err = usbms.OpenLUN(ctx, usbms.NewTransport(dev, usbms.TransportOptions{Name: "sim:card.img"}), 0, opts); err != nil {
		t.Fatal(err)
	}
	initial := &pipeline.DeviceError{Device: "sim:card.img", Op: pipeline.OpRead, LBA: 0, Count: 8, BlockSize: 512, Err: l.ReadBlocks(ctx, 0, make([]byte, 4096))}
	return []adviceCase{
		{"medium/capacity one block too many", asRead, capacityAdvice},
		{"medium/READ(10)s fail after a card goes in", initial, initialRead10Advice},
		{"medium/no medium", noMedium, "insert a card and run the command again"},
		{"medium/no medium, under a failed write", asWrite(noMedium), "insert a card and run the command again"},
		{"medium/medium error", medium, "use another card"},
		{"medium/medium error, under a failed write", asWrite(medium), "use another card"},
		{"medium/changed after writing", swapped, "insert the card again and write the whole image again"},
		{"medium/changed after writing, under a failed write", asWrite(swapped), "insert the card again and write the whole image again"},
		{"medium/never ready", notReady, "take the card out and insert it again"},
		{"medium/recovery failed", fmt.Errorf("WRITE(10): %w after 2 resets and 1 port resets: no answer", usbms.ErrRecoveryFailed),
			"unplug the reader, plug it in again, and run the command again"},
	}
}

// imageAdviceCases has a case for every kind of imagesrc.Error, and for every
// container imagesrc recognises but does not decode.
func imageAdviceCases(t *testing.T) []adviceCase {
	want := map[error]string{
		image.ErrDamaged:            "the file is damaged: download it again and compare its checksum",
		image.ErrTruncated:          "the file is incomplete: download it again and compare its checksum",
		image.ErrNotNamedFormat:     "download the image again: a failed download often saves an error page under the image's name",
		image.ErrChanged:            "write again once nothing modifies the image file",
		image.ErrUnreadable:         "check the disk or network share the image is on, or copy the image to a local disk, and run the command again",
		image.ErrUnsupported:        "extract the image first (unrar x FILE)",
		image.ErrNotAnImage:         "decompress the outer zip first, then write the inner file",
		image.ErrUnsupportedFeature: "the file is not damaged: decompress it with the zip program first, then write the decompressed image",
		image.ErrEmpty:              "download the image again and compare its checksum",
		image.ErrUnsupportedEntry:   "extract it first (unzip or 7z), then write the extracted file",
		image.ErrAmbiguous:          "extract the one you want (unzip FILE NAME) and write that",
		image.ErrNeedsFile:          "save it to a file first, or pipe `unzip -p FILE` instead",
		image.ErrStatedSize:         statedSizeAdvice,
	}
	var cases []adviceCase
	for _, k := range image.Kinds() {
		advice, ok := want[k]
		if !ok {
			t.Errorf("image kind %v has no case here: give it its advice", k)
		}
		e := &image.Error{Kind: k, Format: image.FormatZip, Offset: 1000, Decoded: 4096, Err: errors.New("the facts")}
		if k == image.ErrUnsupported {
			e.Container = "RAR archive"

		}
		cases = append(cases, adviceCase{"image/" + k.Error(), fmt.Errorf("image os.img: %w", e), advice})
	}
	for _, c := range image.UnsupportedContainers() {
		advice := containerAdvice(c)
		if advice == containerAdvice("") {
			t.Errorf("container %q gets only the generic advice %q", c, advice)
		}
		e := &image.Error{Kind: image.ErrNotAnImage, Format: image.FormatGzip, Container: c, Err: errors.New("the facts")}
		cases = append(cases, adviceCase{"image/inside an archive, " + c, e, advice})
	}
	return cases
}

// urlAdviceCases: a URL that could not be read gets advice about the
// server, the certificate or the network (never the disk's), and a
// damaged cache entry advice that reads the server, not the entry again.
func urlAdviceCases() []adviceCase {
	const url = "https://h/os.img.xz"
	cut := func(err error) error {
		// As the decoder meets it: the stream failed mid-image.
		return fmt.Errorf("image %s: %w", url, &image.Error{Kind: image.ErrUnreadable, Format: image.FormatXz, Offset: 1 << 20,
			Err: &httpsrc.Error{URL: url, Offset: 1 << 20, Err: err}})
	}
	network := "check the network connection (and a proxy in HTTPS_PROXY, NO_PROXY) and the server, and run the command again; --cache keeps what was downloaded to resume from"
	mismatch := &image.ChecksumMismatchError{Image: url, From: "the SHA-256 in the name of the cache's entry", Want: strings.Repeat("a", 64), Got: strings.Repeat("b", 64)}
	return []adviceCase{
		{"url/dropped for good", cut(fmt.Errorf("%w: 6 in a row, the last: %w", httpsrc.ErrGaveUp, io.ErrUnexpectedEOF)), network},
		{"url/stalled", cut(fmt.Errorf("%w: 6 in a row, the last: %w", httpsrc.ErrGaveUp, httpsrc.ErrStalled)), network},
		{"url/404", &httpsrc.Error{URL: url, Err: &httpsrc.StatusError{Code: 404, Status: "404 Not Found"}},
			"check the URL: the server has no file there (it may have moved to a newer version)"},
		{"url/403", &httpsrc.Error{URL: url, Err: &httpsrc.StatusError{Code: 403, Status: "403 Forbidden"}},
			"the server refuses the URL: check its user and password or its token (a pre-signed URL expires), or ask the server's owner for access"},
		{"url/503", cut(fmt.Errorf("%w: 6 in a row, the last: %w", httpsrc.ErrGaveUp, &httpsrc.StatusError{Code: 503, Status: "503 Service Unavailable"})),
			"the server is failing or busy: run the command again later; --cache keeps what was downloaded to resume from"},
		{"url/unknown CA", &httpsrc.Error{URL: url, Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}},
			"the server's certificate is signed by a CA this system does not trust: if it is a private CA you trust, name its PEM file with --ca-cert (or set SSL_CERT_FILE), else check the URL"},
		{"url/redirects", &httpsrc.Error{URL: url, Err: httpsrc.ErrRedirects},
			"the server redirects in a loop or too far: check the URL, or give the URL it finally serves the file at"},
		{"url/changed", cut(httpsrc.ErrChanged), "the file changed on the server during the download, or the server does not resume it: run the command again"},
		{"url/not resumable", cut(httpsrc.ErrNotResumable),
			"the connection failed and this server cannot resume it: run the command again on a steadier network, or download the image first"},
		{"catalog/unavailable folder", &catalog.FindError{Name: "Broken / OS", Candidates: []string{"Broken: the server answered 404 Not Found"}, Err: catalog.ErrUnavailable},
			"the folder's list could not be read: check the network and the catalog's server and run the command again; `usbflash images` lists what can be read"},
		{"cache/damaged", &image.CacheEntryError{Path: "/c/sha256-b", Err: mismatch},
			"run the command again (a station's next card does it): it downloads the image from the server; if copies in --cache keep being damaged, check the disk the cache is on"},
		{"cache/not the list's", &image.CacheEntryError{Path: "/c/sha256-b", Intact: true, Err: mismatch},
			"run the command again: it downloads the image from the server, whose copy is checked against the checksum again"},
	}
}

// targetAdviceCases has a case for every kind of path filedev refuses.
func targetAdviceCases(t *testing.T) []adviceCase {
	want := map[error]string{
		filedev.ErrBadSize:           "give a size that is a multiple of 512 bytes",
		filedev.ErrMissing:           "check the path",
		filedev.ErrNeedsSize:         "give a size to create an image file, as in file:/tmp/card.img?size=8GiB",
		filedev.ErrNoDirectory:       "create the directory first, or check the path",
		filedev.ErrNotADevice:        "check the device name",
		filedev.ErrWrongType:         "give a regular file or a block device",
		filedev.ErrWouldShrink:       "drop size= or give at least 4194304",
		filedev.ErrShortReadOnly:     "drop size= or give at most 4194304",
		filedev.ErrSizedDevice:       "drop size=: a block device is as large as it is",
		filedev.ErrDeviceUnsupported: "use a usb: target",
	}
	var cases []adviceCase
	for _, k := range filedev.Kinds() {
		advice, ok := want[k]
		if !ok {
			t.Errorf("target kind %v has no case here: give it its advice", k)
		}
		e := &filedev.TargetError{Path: "/tmp/card.img", Kind: k, What: "is what it is", Size: 524288, FileSize: 4194304}
		cases = append(cases, adviceCase{"target/" + k.Error(), e, advice})
	}
	return cases
}

// cardAdviceCases has a case for every kind of file that cannot be a sim:
// card.
func cardAdviceCases(t *testing.T) []adviceCase {
	want := map[error]string{
		sim.ErrCardNeedsSize:     "add ?size=64MiB (or another size) to create it",
		sim.ErrCardWouldShrink:   "drop size= or give at least 4194304",
		sim.ErrCardBadSize:       "use size= to set its size, a positive multiple of 512 bytes",
		sim.ErrCardShortReadOnly: "drop size= or give at most 4194304",
		sim.ErrCardNotAFile:      "give a file for the card, as in sim:card.img?size=64MiB",
		sim.ErrCardNoDirectory:   "create the directory first, or check the path",
	}
	var cases []adviceCase
	for _, k := range sim.CardKinds() {
		advice, ok := want[k]
		if !ok {
			t.Errorf("card kind %v has no case here: give it its advice", k)
		}
		e := &sim.CardError{Path: "/tmp/card.img", Kind: k, What: "is what it is", FileSize: 4194304, Block: 512}
		cases = append(cases, adviceCase{"sim card/" + k.Error(),
			fmt.Errorf("target sim:/tmp/card.img: %w", e), advice})
	}
	return cases
}

// driveAdviceCases are the command line's mistakes about targets that
// drive tells apart by kind.
func driveAdviceCases(t *testing.T) []adviceCase {
	_, path := drive.Parse("/tmp/card.img")
	_, diskPath := drive.Parse("/dev/sdb")
	if path == nil || diskPath == nil {
		t.Fatal("a path parsed as a target")
	}
	kind := func(k error, msg string) error { return &drive.Error{Target: "file:/tmp/card.img", Msg: msg, Err: k} }
	compare := func(k error, msg string) error {
		return &failure.SettingError{Setting: drive.SettingKernelDisk, Err: &drive.Error{Target: "usb:1.4", Msg: "usb:1.4: " + msg, Err: k}}
	}
	return []adviceCase{
		{"target/a path", path, "write file:/tmp/card.img for an image file"},
		{"target/a disk's path", diskPath, "write disk:/dev/sdb for the whole disk"},
		{"target/not a disk", &drive.Error{Target: "disk:/tmp/os.img", Msg: "target disk:/tmp/os.img is not a disk", Err: drive.ErrNotADisk},
			`name a whole disk as ` + "`usbflash list`" + ` shows it (disk:/dev/sdX, disk:/dev/rdiskN, disk:\\.\PhysicalDriveN); an image file is file:PATH`},
		{"target/a partition", &drive.Error{Target: "disk:/dev/sdb1", Msg: "target disk:/dev/sdb1: /dev/sdb1 is a partition of /dev/sdb, not a whole disk", Err: drive.ErrNotWholeDisk},
			"name the whole disk, not one of its partitions: `usbflash list` shows it"},
		{"target/no disk: here", &drive.Error{Target: "disk:/dev/da0", Msg: "target disk:/dev/da0: disk: targets are for Linux, macOS and Windows, not freebsd", Err: drive.ErrDiskUnsupported},
			"use a usb: reader, or file: for an image file"},
		{"target/the system's disk", &drive.Error{Target: "disk:/dev/rdisk0", Msg: "target disk:/dev/rdisk0 (APPLE SSD) holds the running system's volume; nothing was written", Err: drive.ErrSystemDisk},
			"choose another disk: `usbflash list` shows the ones that can be written"},
		{"target/an internal disk", &drive.Error{Target: `disk:\\.\PhysicalDrive1`, Msg: `target disk:\\.\PhysicalDrive1 (WDC, SATA) is an internal disk, not a card or stick; nothing was written`, Err: drive.ErrInternalDisk},
			"check that this is the disk you mean (`usbflash list` shows the external ones), then pass --force to write an internal disk"},
		{"target/volumes held open", &drive.Error{Target: "disk:/dev/rdisk4", Msg: "target disk:/dev/rdisk4 is in use: unmounting the volumes of disk4 failed: disk4s1 held by PID 512 (/usr/libexec/mds_stores); nothing was written",
			Err: drive.ErrInUse, Uses: []drive.Use{drive.UseOpenFiles}},
			"quit the programs that have files open on it first, or pass --force if you are sure"},
		{"target/no administrator", &drive.Error{Target: `disk:\\.\PhysicalDrive2`, Msg: `opening \\.\PhysicalDrive2 needs an administrator: this usbflash runs without an administrator's rights`,
			Err: &diskdev.PermissionError{Path: `\\.\PhysicalDrive2`, Need: "an administrator", Err: errors.New("this usbflash runs without an administrator's rights")}},
			"run usbflash from a terminal opened with Run as administrator"},
		{"target/no authorization", &diskdev.PermissionError{Path: "/dev/rdisk4", Need: "root or an administrator's authorization", Err: errors.New("/usr/libexec/authopen sent no descriptor for /dev/rdisk4: exit status 1")},
			"give an administrator's name and password when macOS asks, or run it with sudo"},
		{"target/not root", &diskdev.PermissionError{Path: "/dev/rdisk4", Need: "root", Err: errors.New("permission denied")},
			"run it with sudo"},
		{"target/several readers", kind(drive.ErrAmbiguous, "target usb:0bda:0158 matches 2 readers"), "add the serial (usb:VID:PID:SERIAL) or use usb:BUS.ADDR"},
		{"target/same reader twice", kind(drive.ErrSameReader, "targets 0 and 0 are the same reader"), "name each slot with /LUN (lun=N for sim:)"},
		{"target/which slot", kind(drive.ErrWhichSlot, "usb:1.4 has 2 LUNs (slots), 2 with a card"), "choose one with /LUN (lun=N for sim:)"},
		{"target/file needs a size", kind(drive.ErrNeedsSize, "target file:/tmp/card.img does not exist"), "give one, as in file:/tmp/card.img?size=8GiB"},
		// One piece of advice for every way a disk is used.
		{"target/in use, mounted and held", &drive.Error{Target: "file:/dev/sdb", Msg: "file:/dev/sdb is in use: /dev/sdb1 is mounted on /mnt, /dev/sdb2 is held by dm-0",
			Err: drive.ErrInUse, Uses: []drive.Use{drive.UseMounted, drive.UseHeld}},
			"unmount it and close the dm-crypt, LVM or RAID device that holds it first, or pass --force if you are sure"},
		{"target/in use, no use named", &drive.Error{Target: "file:/dev/sdb", Msg: "file:/dev/sdb is in use", Err: drive.ErrInUse}, "close what uses it first, or pass --force if you are sure"},
		{"compare/not usb", compare(drive.ErrNotUSB, "not a usb: reader"), "give --compare=file:PATH"},
		{"compare/no kernel disk", compare(drive.ErrNoKernelDisk, "the kernel has no disk for it"), "give --compare=file:/dev/sdX"},
		{"compare/several kernel disks", compare(drive.ErrKernelDisks, "several kernel disks"), "add /LUN to the target"},
	}
}

// pipelineAdviceCases are the kinds the pipeline and the CLI itself report.
func pipelineAdviceCases() []adviceCase {
	return []adviceCase{
		{"pipeline/not confirmed", fmt.Errorf("%w: no terminal to ask on", termui.ErrNotConfirmed), "pass --yes to write without being asked"},
		{"pipeline/too large", &blockdev.CapacityError{Device: "sim:x", ImageSize: 3 << 20, Capacity: 2 << 20}, "use a larger card"},
		{"pipeline/verify", &pipeline.VerifyError{Device: "sim:x", LBA: 8, Offset: 4096, Want: 1, Got: 2},
			"write the image again; if the difference stays, the card is failing or fake: use another card"},
		{"pipeline/image size", &pipeline.ImageSizeError{Declared: 4096, Actual: 1024}, "download the image again and compare its checksum"},
		{"pipeline/cancelled mid-write", &pipeline.CancelledError{Device: "sim:x", Phase: pipeline.PhaseWrite, Bytes: 1 << 20, LBA: 2048, Err: context.Canceled},
			"run the write again"},
		{"pipeline/sync", &pipeline.DeviceError{Device: "sim:x", Op: pipeline.OpSync, LBA: -1, Err: errors.New("no answer")},
			"check that the card is still inserted, then write again"},
		{"pipeline/device", &pipeline.DeviceError{Device: "sim:x", Op: pipeline.OpRead, LBA: 8, Count: 8, BlockSize: 512, Err: usbms.ErrPhaseError},
			"check that the card is inserted and the reader connected, then run the command again"},
	}
}

// trustAdviceCases has a case for every error of an image not trusted or
// a card left unbootable (issue 41).
func trustAdviceCases() []adviceCase {
	differs := &pipeline.VerifyError{Device: "sim:x", LBA: 8, Offset: 4096, Want: 1, Got: 2}
	again := "write the image again; if the difference stays, the card is failing or fake: use another card"
	return []adviceCase{
		{"trust/no signed sum", &image.ReadError{Err: &image.NoSignedSumError{Image: "os.img"}}, noSignedSumAdvice(&image.NoSignedSumError{})},
		{"trust/no signed sum, standard input", &image.ReadError{Err: &image.NoSignedSumError{Image: "standard input", Stdin: true}},
			noSignedSumAdvice(&image.NoSignedSumError{Stdin: true})},
		{"trust/repair of standard input", inFlagWords(&failure.SettingError{Setting: session.SettingRepair, Err: session.ErrRepairStdin}),
			"save the image to a file and repair from that"},
		{"trust/repair of a URL not kept", &session.RepairNotKeptError{Image: "https://example.org/os.img.xz"},
			"give --cache a directory on a disk with room for the image, or download it and repair from the file"},
		{"trust/first transfer zeroed", &session.FirstZeroedError{Card: "sim:x", Bytes: 1 << 20, Err: differs}, again},
		{"trust/first transfer not zeroed", &session.FirstZeroedError{Card: "sim:x", Bytes: 0, ZeroErr: errors.New("no answer"), Err: differs},
			"do not boot the card: it may boot bytes that are wrong; " + again},
		{"trust/a repair that failed, from verify", &compareError{&session.FirstZeroedError{Card: "sim:x", Bytes: 1 << 20,
			Err: &pipeline.RepairError{Device: "sim:x", Rounds: 3, First: differs}}}, again},
	}
}

// benchAdviceCases has a case for every way a bench plan does not fit, as
// the plan says it and the command names its flag.
func benchAdviceCases(t *testing.T) []adviceCase {
	layout := func(p cardbench.Plan) error {
		_, err := p.Layout("sim:c.img", 1<<30, 512)
		return err
	}
	var cases []adviceCase
	for _, c := range []struct {
		name   string
		err    error
		advice string
	}{
		{"size past memory", cardbench.Plan{Sizes: []int64{2 << 30}}.Check(), "give --sizes of at most 1 GiB"},
		{"preserved region past memory", cardbench.Plan{Region: &cardbench.Region{Length: 1 << 30}, Preserve: true}.Check(),
			"give a --region of at most 512 MiB, or leave out --preserve if its data may be lost"},
		{"size not whole blocks", layout(cardbench.Plan{Sizes: []int64{1000}}), "give --sizes in multiples of 512 bytes"},
		{"size past the card", layout(cardbench.Plan{Sizes: []int64{1<<30 + 512}}), "give --sizes of at most 1 GiB"},
		{"size past the region", layout(cardbench.Plan{Sizes: []int64{1 << 20}, Region: &cardbench.Region{Length: 4096}}), "give --sizes of at most 4 KiB"},
		{"region past the card", layout(cardbench.Plan{Region: &cardbench.Region{Offset: 1 << 30, Length: 4096}}),
			"give a --region of whole blocks that ends within 1073741824 bytes"},
	} {
		if c.err == nil {
			t.Errorf("bench plan %s: accepted", c.name)
			continue
		}
		cases = append(cases, adviceCase{"bench plan/" + c.name, inFlagWords(c.err), c.advice})
	}
	return cases
}

// outputAdviceCases are the files usbflash writes (a backup, a plot, a
// preserved region's recovery file) and the backup's own refusals.
func outputAdviceCases() []adviceCase {
	stated := cardbench.Region{Name: "region", Offset: 1 << 20, Length: 1 << 20}
	mismatch := &pipeline.VerifyError{Device: "sim:card.img", HashOnly: true, Size: 4 << 20}
	return []adviceCase{
		{"backup/exists", &imagedst.ExistsError{Path: "/tmp/b.img"}, "pass --force to overwrite it"},
		{"backup/size past the card", fmt.Errorf("--size %w", &imagedst.SizeError{Device: "sim:card.img", Want: 5 << 20, Capacity: 4 << 20}),
			"give a smaller --size, or leave it out to read the whole card"},
		{"backup/second read differs", &imagedst.VerifyError{Out: "/tmp/b.img", Part: "/tmp/b.img.part", Err: mismatch},
			"read the card again, with another reader or USB port if you can; if the reads still differ, the card is failing: keep /tmp/b.img.part, it may be the best copy there is"},
		{"output/cannot create", &outfile.Error{Path: "/tmp/missing/plot.svg", Op: outfile.OpCreate, Err: syscall.ENOENT},
			"name a file in a directory that exists and that you can write to"},
		{"output/disk full", fmt.Errorf("writing the backup of sim:card.img at byte offset 0: %w", &outfile.Error{Path: "/tmp/b.img.part", Op: outfile.OpWrite, Err: syscall.ENOSPC}),
			"free space on that disk, or name a file on another one"},
		{"output/write failed", &outfile.Error{Path: "/tmp/b.img.part", Op: outfile.OpWrite, Err: syscall.EIO},
			"check the disk the file is written to, or name a file on another one"},
		{"preserve/restore failed", &region.RestoreError{Region: stated, Device: "sim:/tmp/card.img", Disk: "/tmp/card.img", BlockSize: 512,
			Err: errors.New("WRITE at LBA 2048: medium error"), File: "/tmp/usbflash-bench-region-1048576-1.img"},
			"put them back with this command:\n  dd if=/tmp/usbflash-bench-region-1048576-1.img of=/tmp/card.img bs=512 seek=2048 conv=notrunc,fsync"},
		{"preserve/restore aborted", &region.RestoreError{Region: stated, Device: "usb:0bda:0158", BlockSize: 512, Aborted: true,
			File: "/tmp/usbflash-bench-region-1048576-1.img"},
			"put them back with this command, DISK being the reader's disk, which `usbflash list` shows as kernel: /dev/sdX:\n  dd if=/tmp/usbflash-bench-region-1048576-1.img of=DISK bs=512 seek=2048 conv=notrunc,fsync"},
		{"preserve/restore aborted, disk known", &region.RestoreError{Region: stated, Device: "usb:0bda:0158", Disk: "/dev/sdb", Claimed: true, BlockSize: 512, Aborted: true,
			File: "/tmp/usbflash-bench-region-1048576-1.img"},
			"put them back with this command (/dev/sdb was the reader's disk before usbflash claimed it: `usbflash list` shows whether it still is):\n  dd if=/tmp/usbflash-bench-region-1048576-1.img of=/dev/sdb bs=512 seek=2048 conv=notrunc,fsync"},
		{"preserve/no file either", &region.RestoreError{Region: stated, Device: "file:/dev/sdb", BlockSize: 512,
			Err: errors.New("WRITE at LBA 2048: medium error"), FileErr: syscall.ENOSPC},
			"the region's old bytes are lost: restore them from a backup if you have one"},
	}
}

// customizeAdviceCases: each refusal of a customisation, before the first
// byte, as the session reports it.
func customizeAdviceCases() []adviceCase {
	in := func(err error) error { return fmt.Errorf("customising os.img: %w", err) }
	return []adviceCase{
		{"customize/unrecognised", in(customize.ErrUnrecognised), "give the format its system uses: --init-format " + customize.FormatNames()},
		{"customize/no cmdline.txt", in(customize.ErrNoCmdline), "give the format its system uses with --init-format: systemd is Raspberry Pi OS's up to Bookworm"},
		{"customize/ESP", in(fmt.Errorf("%w: partition 1 (MBR type 0xef, FAT12); rpi-preseed reads rpi-preseed.toml from a Raspberry Pi's boot partition", customize.ErrESP)),
			"leave config.txt lines out, and give --init-format cloudinit if its system runs cloud-init"},
		{"customize/no room", fmt.Errorf("customising sim:card.img: %w: it would end at 10.5 MB, and the disk has 7.4 MB", customize.ErrNoRoom),
			"use a larger card; an image file gets the partition only as it is written to a card (usbflash write)"},
		{"customize/no slot", in(customize.ErrNoSlot), "set the system up after its first boot instead"},
		{"customize/no FAT", in(fmt.Errorf("%w: partitions 1 (MBR type 0x83)", customize.ErrNoFAT)),
			"write it without first-boot settings: only an image with a FAT boot partition takes them"},
		{"customize/empty file", in(fmt.Errorf("%w: rpi-preseed.toml", customize.ErrEmptyFile)),
			"write the image without first-boot settings, delete that empty file (mdel), then run usbflash customize"},
		{"customize/full", &session.CustomizeError{Card: "sim:card.img", Err: fmt.Errorf("writing firstrun.sh: %w", customize.ErrFull)},
			"leave out the files that do not fit, or use an image with a larger boot partition"},
		{"customize/device serial", fmt.Errorf("customising sim:card.img: %w", &customize.DeviceValueError{Err: &failure.SettingError{Setting: customize.SettingHostname,
			Err: &customize.ValueError{Key: "hostname", Value: "pi-{usb_serial}", Expanded: "pi-" + strings.Repeat("A", 70), Rule: "a host name is 1 to 63 letters"}}}),
			"leave the serial out of the template ({n} numbers the cards), or use another reader"},
	}
}
