package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"

	"github.com/usbflash/usbflash/internal/customize"
	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/lib/outfile"
	"github.com/usbflash/usbflash/internal/lib/shown"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/probe/cardbench"
	"github.com/usbflash/usbflash/internal/probe/fakecheck"
	"github.com/usbflash/usbflash/internal/probe/region"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/report"
	"github.com/usbflash/usbflash/internal/ui/termui"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/pipeline/blockdev"
	"github.com/usbflash/usbflash/pipeline/diskdev"
	"github.com/usbflash/usbflash/pipeline/filedev"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// explain is what a person reads of err: the facts, each once, the
// setting a library names told by the flag that gave it, and one piece of
// advice ("" when there is none worth giving).
func explain(err error) (msg, advice string) {
	err = inFlagWords(err)
	return termui.Facts(err), shown.URLsIn(hint(err))
}

// newErrorEvent is the error event of err, which ends the command with
// code.
func newErrorEvent(err error, code int) *jsonevents.Error {
	msg, hint := explain(err)
	return &jsonevents.Error{Message: msg, Hint: hint, Code: code, ExitName: exitName(code)}
}

// hint is the advice for err: the first row of the advice table for its
// class whose kind it is. Library errors state facts only, so each
// message carries one piece of advice, the table's. Several cards' errors
// get none: each card's own is in the table of cards.
func hint(err error) string {
	if errors.As(err, new(*session.CardsError)) {
		return ""
	}
	class := failure.Of(err)
	for _, a := range adviceTable() {
		if a.class == class && a.kind(err) {
			return a.say(err)
		}
	}
	return ""
}

// advice is one row of the advice table: what to say (say) about a
// failure of class that is of kind.
type advice struct {
	class failure.Class
	kind  kind
	say   func(error) string
}

// kind says whether an error is of one kind of failure within its class:
// it holds a sentinel (is), an error of a type (as), or one of a type
// that says so (asIf).
type kind func(error) bool

func is(sentinel error) kind { return func(err error) bool { return errors.Is(err, sentinel) } }

func as[E error]() kind { return asIf(func(E) bool { return true }) }

func asIf[E error](ok func(E) bool) kind {
	return func(err error) bool {
		var e E
		return errors.As(err, &e) && ok(e)
	}
}

// planOf is a bench plan's error about setting s.
func planOf(s failure.Setting) kind {
	return func(err error) bool { return failure.SettingOf(err) == s && errors.As(err, new(*cardbench.PlanError)) }
}

// statusAdvice is what to do about a server's answer that is not the file.
func statusAdvice(e *httpsrc.StatusError) string {
	switch {
	case e.Code == 404 || e.Code == 410:
		return "check the URL: the server has no file there (it may have moved to a newer version)"
	case e.Code == 401 || e.Code == 403:
		return "the server refuses the URL: check its user and password or its token (a pre-signed URL expires), or ask the server's owner for access"
	case e.Code == 429 || e.Code >= 500:
		return "the server is failing or busy: run the command again later; --cache keeps what was downloaded to resume from"
	}
	return "check the URL, and that it is the file itself rather than a page about it"
}

// httpAdvice is what to do about a URL that could not be read to its end,
// by its cause: the certificate, the redirects, the file changing, the
// network.
func httpAdvice(e *httpsrc.Error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(e, &unknown):
		return "the server's certificate is signed by a CA this system does not trust: if it is a private CA you trust, name its PEM file with --ca-cert (or set SSL_CERT_FILE), else check the URL"
	case errors.As(e, &host), errors.As(e, &invalid):
		return "the server's certificate is not valid for it: check the URL's host name and the server's certificate, and the system's clock"
	case errors.Is(e, httpsrc.ErrRedirects):
		return "the server redirects in a loop or too far: check the URL, or give the URL it finally serves the file at"
	case errors.Is(e, httpsrc.ErrChanged), errors.Is(e, httpsrc.ErrResumeWhole), errors.Is(e, httpsrc.ErrBadRange):
		return "the file changed on the server during the download, or the server does not resume it: run the command again"
	case errors.Is(e, httpsrc.ErrNotResumable):
		return "the connection failed and this server cannot resume it: run the command again on a steadier network, or download the image first"
	}
	return "check the network connection (and a proxy in HTTPS_PROXY, NO_PROXY) and the server, and run the command again; --cache keeps what was downloaded to resume from"
}

// text is advice that is the same for every error of its kind.
func text(s string) func(error) string { return func(error) string { return s } }

// from is advice made from the facts an error of type E carries.
func from[E error](f func(E) string) func(error) string {
	return func(err error) string {
		var e E
		errors.As(err, &e)
		return f(e)
	}
}

// adviceTable is every piece of advice usbflash gives, by class and kind.
// Within a class the first row that matches wins, so narrow kinds come
// before the broad ones that wrap them.
func adviceTable() []advice {
	return []advice{
		// A bench plan that does not fit, by the setting at fault.
		{failure.Usage, is(cardbench.ErrNotWholeBlocks), from(func(e *cardbench.PlanError) string {
			return fmt.Sprintf("give --sizes in multiples of %d bytes", e.Limit)
		})},
		{failure.Usage, planOf(cardbench.SettingSizes), from(func(e *cardbench.PlanError) string { return "give --sizes of at most " + units.FormatSize(e.Limit) })},
		{failure.Usage, planOf(cardbench.SettingPreserve), from(func(e *cardbench.PlanError) string {
			return fmt.Sprintf("give a --region of at most %s, or leave out --preserve if its data may be lost", units.FormatSize(e.Limit))
		})},
		{failure.Usage, planOf(cardbench.SettingRegion), from(func(e *cardbench.PlanError) string {
			return fmt.Sprintf("give a --region of whole blocks that ends within %d bytes", e.Limit)
		})},
		{failure.Usage, as[*session.MemoryError](), text("use a smaller --transfer-size, fewer --buffers or a smaller --lag")},
		{failure.Usage, as[*image.ChecksumArgError](), text("give the 64 hexadecimal digits the publisher lists, or --no-sha256")},
		{failure.Usage, as[*image.KeyringError](), text("name the publisher's public keys as gpg --export writes them")},
		{failure.Usage, as[*report.Error](), text("name a report file in a directory you can write to")},
		{failure.Usage, is(report.ErrFormat), text("name a .json or .csv file")},
		{failure.Usage, is(session.ErrBlockMapOneCard), text("give one TARGET, without --all, --watch or --report")},
		{failure.Usage, is(session.ErrBlockMapConflict), text("pass one of them")},
		{failure.Usage, is(session.ErrRepairStdin), text("save the image to a file and repair from that")},
		{failure.Usage, is(image.ErrChecksumConflict), text("pass one of them: --sha256 checks a sum you trust as it is, --sha256-keyring the publisher's signed list beside the image")},
		{failure.Usage, asIf(func(e *outfile.Error) bool { return e.Op == outfile.OpCreate }), text("name a file in a directory that exists and that you can write to")},
		// A path that cannot be a file: target, by its kind.
		{failure.Usage, is(filedev.ErrBadSize), text("give a size that is a multiple of 512 bytes")},
		{failure.Usage, is(filedev.ErrMissing), text("check the path")},
		{failure.Usage, is(filedev.ErrNeedsSize), from(func(e *filedev.TargetError) string {
			return fmt.Sprintf("give a size to create an image file, as in file:%s?size=8GiB", e.Path)
		})},
		{failure.Usage, is(filedev.ErrNoDirectory), text("create the directory first, or check the path")},
		{failure.Usage, is(filedev.ErrNotADevice), text("check the device name")},
		{failure.Usage, is(filedev.ErrWrongType), text("give a regular file or a block device")},
		{failure.Usage, is(filedev.ErrWouldShrink), from(func(e *filedev.TargetError) string { return fmt.Sprintf("drop size= or give at least %d", e.FileSize) })},
		{failure.Usage, is(filedev.ErrShortReadOnly), from(func(e *filedev.TargetError) string { return fmt.Sprintf("drop size= or give at most %d", e.FileSize) })},
		{failure.Usage, is(filedev.ErrSizedDevice), text("drop size=: a block device is as large as it is")},
		{failure.Usage, is(filedev.ErrDeviceUnsupported), text("use a usb: target")},
		{failure.Usage, is(drive.ErrPath), from(func(e *drive.Error) string {
			if t := drive.PathTarget(e.Target); strings.HasPrefix(t, "disk:") {
				return fmt.Sprintf("write %s for the whole disk", t)
			}
			return fmt.Sprintf("write file:%s for an image file", e.Target)
		})},
		{failure.Usage, is(drive.ErrNotADisk), text("name a whole disk as `usbflash list` shows it (disk:/dev/sdX, disk:/dev/rdiskN, disk:\\\\.\\PhysicalDriveN); an image file is file:PATH")},
		{failure.Usage, is(drive.ErrNotWholeDisk), text("name the whole disk, not one of its partitions: `usbflash list` shows it")},
		{failure.Usage, is(drive.ErrDiskUnsupported), text("use a usb: reader, or file: for an image file")},
		{failure.Usage, is(drive.ErrAmbiguous), text("add the serial (usb:VID:PID:SERIAL) or use usb:BUS.ADDR")},
		{failure.Usage, is(drive.ErrSameReader), text("name each slot with /LUN (lun=N for sim:)")},
		{failure.Usage, is(drive.ErrWhichSlot), text("choose one with /LUN (lun=N for sim:)")},
		{failure.Usage, is(drive.ErrNeedsSize), from(func(e *drive.Error) string { return fmt.Sprintf("give one, as in %s?size=8GiB", e.Target) })},
		{failure.Usage, is(drive.ErrNotUSB), text("give --compare=file:PATH")},
		{failure.Usage, is(drive.ErrNoKernelDisk), text("give --compare=file:/dev/sdX")},
		{failure.Usage, is(drive.ErrKernelDisks), text("add /LUN to the target")},
		// A file that cannot be a sim: card, by its kind.
		{failure.Usage, is(sim.ErrCardNeedsSize), text("add ?size=64MiB (or another size) to create it")},
		{failure.Usage, is(sim.ErrCardWouldShrink), from(func(e *sim.CardError) string { return fmt.Sprintf("drop size= or give at least %d", e.FileSize) })},
		{failure.Usage, is(sim.ErrCardBadSize), from(func(e *sim.CardError) string {
			return fmt.Sprintf("use size= to set its size, a positive multiple of %d bytes", e.Block)
		})},
		{failure.Usage, is(sim.ErrCardShortReadOnly), from(func(e *sim.CardError) string { return fmt.Sprintf("drop size= or give at most %d", e.FileSize) })},
		{failure.Usage, is(sim.ErrCardNotAFile), text("give a file for the card, as in sim:card.img?size=64MiB")},
		{failure.Usage, is(sim.ErrCardNoDirectory), text("create the directory first, or check the path")},

		{failure.Refused, as[*session.RefusedError](), from(refusalsAdvice)},
		{failure.Refused, asIf(func(e *image.BlockMapError) bool { return !e.Unreadable }), text("pass --no-bmap to write every byte")},
		{failure.Refused, as[*session.RepairNotKeptError](), text("give --cache a directory on a disk with room for the image, or download it and repair from the file")},
		{failure.Refused, is(drive.ErrInUse), from(func(e *drive.Error) string { return inUseAdvice(e.Uses) + " first, or pass --force if you are sure" })},
		{failure.Refused, is(drive.ErrInUseUnknown), text("pass --force to skip this check if you are sure nothing uses the disk")},
		{failure.Refused, is(drive.ErrBusy), text("wait for it to finish")},
		{failure.Refused, is(drive.ErrSystemDisk), text("choose another disk: `usbflash list` shows the ones that can be written")},
		{failure.Refused, is(drive.ErrInternalDisk), text("check that this is the disk you mean (`usbflash list` shows the external ones), then pass --force to write an internal disk")},
		{failure.Refused, is(session.ErrTooSmallImage), text("pass --force to write it anyway")},
		{failure.Refused, is(session.ErrDiscOnly), text("a USB installer of Windows is a FAT32 stick holding the ISO's files, with sources/install.wim split below FAT32's 4 GiB (wimlib-imagex split install.wim install.swm 3800), or a tool that makes one (Rufus, WoeUSB); for another system use its hybrid ISO or its USB image; pass --force to write this one raw anyway")},
		{failure.Refused, as[*imagedst.ExistsError](), text("pass --force to overwrite it")},
		{failure.Refused, as[*imagedst.SizeError](), text("give a smaller --size, or leave it out to read the whole card")},
		{failure.Refused, is(termui.ErrNotConfirmed), text("pass --yes to write without being asked")},
		{failure.Refused, is(blockdev.ErrWriteProtected), text("slide the card's lock switch to unlock it, or use another card")},
		{failure.Refused, as[*blockdev.CapacityError](), text("use a larger card")},
		{failure.Refused, is(usbms.ErrCapacityOffByOne), text(capacityAdvice)},
		{failure.Refused, is(drive.ErrOneMedium), text(oneMediumAdvice("VID:PID"))},
		// A customisation that cannot be written as asked, by its kind.
		{failure.Refused, as[*customize.DeviceValueError](), text("leave the serial out of the template ({n} numbers the cards), or use another reader")},
		{failure.Refused, is(customize.ErrUnrecognised), text("give the format its system uses: --init-format " + customize.FormatNames())},
		{failure.Refused, is(customize.ErrNoCmdline), text("give the format its system uses with --init-format: systemd is Raspberry Pi OS's up to Bookworm")},
		{failure.Refused, is(customize.ErrESP), text("leave config.txt lines out, and give --init-format cloudinit if its system runs cloud-init")},
		{failure.Refused, is(customize.ErrNoRoom), text("use a larger card; an image file gets the partition only as it is written to a card (usbflash write)")},
		{failure.Refused, is(customize.ErrNoSlot), text("set the system up after its first boot instead")},
		{failure.Refused, is(customize.ErrNoFAT), text("write it without first-boot settings: only an image with a FAT boot partition takes them")},
		{failure.Refused, is(customize.ErrEmptyFile), text("write the image without first-boot settings, delete that empty file (mdel), then run usbflash customize")},
		{failure.Refused, is(customize.ErrFull), text("leave out the files that do not fit, or use an image with a larger boot partition")},

		{failure.Image, as[*image.CacheEntryError](), from(func(e *image.CacheEntryError) string {
			if e.Intact {
				return "run the command again: it downloads the image from the server, whose copy is checked against the checksum again"
			}
			return "run the command again (a station's next card does it): it downloads the image from the server; if copies in --cache keep being damaged, check the disk the cache is on"
		})},
		{failure.Image, is(catalog.ErrUnavailable), text("the folder's list could not be read: check the network and the catalog's server and run the command again; `usbflash images` lists what can be read")},
		// A URL that could not be read: the server's or the network's
		// doing, not a disk's (image.ErrUnreadable's advice).
		{failure.Image, as[*httpsrc.StatusError](), from(statusAdvice)},
		{failure.Image, as[*httpsrc.Error](), from(httpAdvice)},
		{failure.Image, as[*image.ChecksumMismatchError](), text("download the image again (with its checksum) and write again")},
		{failure.Image, as[*image.ChecksumListError](), text(checksumListAdvice)},
		{failure.Image, as[*image.ChecksumConflictError](), text(checksumListAdvice)},
		{failure.Image, is(image.ErrListUnsigned), text("download the list's signature (LIST.gpg or LIST.sign, as the publisher names it) beside it, or give the sum the publisher lists with --sha256")},
		{failure.Image, as[*image.NoSignedSumError](), from(noSignedSumAdvice)},
		{failure.Image, as[*image.ChecksumSignatureError](), text("do not trust this download: fetch the checksum list and its signature again from the publisher, and check that --sha256-keyring holds the publisher's key")},
		// An image that cannot be written as it is, by its kind.
		{failure.Image, is(image.ErrDamaged), text("the file is damaged: download it again and compare its checksum")},
		{failure.Image, is(image.ErrTruncated), text("the file is incomplete: download it again and compare its checksum")},
		{failure.Image, is(image.ErrNotNamedFormat), text("download the image again: a failed download often saves an error page under the image's name")},
		{failure.Image, is(image.ErrChanged), text("write again once nothing modifies the image file")},
		{failure.Image, is(image.ErrUnreadable), text("check the disk or network share the image is on, or copy the image to a local disk, and run the command again")},
		{failure.Image, is(image.ErrUnsupported), from(func(e *image.Error) string { return containerAdvice(e.Container) })},
		{failure.Image, is(image.ErrNotAnImage), from(notAnImageAdvice)},
		{failure.Image, is(image.ErrEmpty), text("download the image again and compare its checksum")},
		{failure.Image, is(image.ErrUnsupportedEntry), text("extract it first (unzip or 7z), then write the extracted file")},
		{failure.Image, is(image.ErrAmbiguous), text("extract the one you want (unzip FILE NAME) and write that")},
		{failure.Image, is(image.ErrNeedsFile), from(func(e *image.Error) string {
			if e.Format == image.Format7z {
				return "free space in the temporary directory (or point TMPDIR at a disk that has it), or save the archive to a file first"
			}
			return "save it to a file first, or pipe `unzip -p FILE` instead"
		})},
		{failure.Image, is(image.ErrUnsupportedFeature), from(func(e *image.Error) string {
			return fmt.Sprintf("the file is not damaged: decompress it with the %s program first, then write the decompressed image", e.Format)
		})},
		{failure.Image, as[*pipeline.ImageSizeError](), text("download the image again and compare its checksum")},
		{failure.Image, is(image.ErrStatedSize), text(statedSizeAdvice)},

		{failure.Verify, as[*session.FirstZeroedError](), from(firstZeroedAdvice)},
		{failure.Verify, as[*session.CustomizeInterruptedError](), from(customizeAdvice)},
		{failure.Verify, asIf(func(e *compareError) bool { return errors.As(e, new(*pipeline.VerifyError)) }),
			text("the card holds something other than this image (another image, or an older write): write the image to it if it should hold it")},
		{failure.Verify, asIf(func(e *imagedst.VerifyError) bool { return errors.As(e.Err, new(*pipeline.VerifyError)) }), from(func(e *imagedst.VerifyError) string {
			return fmt.Sprintf("read the card again, with another reader or USB port if you can; if the reads still differ, the card is failing: keep %s, it may be the best copy there is", e.Part)
		})},
		{failure.Verify, as[*pipeline.InconsistentError](), text("the reader returned different data for the same blocks: write the image again through another reader or USB port")},
		{failure.Verify, as[*pipeline.VerifyError](), text("write the image again; if the difference stays, the card is failing or fake: use another card")},

		{failure.Device, as[*session.CustomizeInterruptedError](), from(customizeAdvice)},
		{failure.Device, is(drive.ErrNotFound), text("run 'usbflash list'")},
		{failure.Device, as[*fakecheck.RestoreError](), from(checkRestoreAdvice)},
		{failure.Device, as[*region.RestoreError](), from(restoreAdvice)},
		{failure.Device, asIf(func(e *outfile.Error) bool { return errors.Is(e.Err, syscall.ENOSPC) }), text("free space on that disk, or name a file on another one")},
		{failure.Device, as[*outfile.Error](), text("check the disk the file is written to, or name a file on another one")},
		// The USB layer's kinds, before the layers above that wrap them:
		// the end of the recovery ladder, a failed block command.
		{failure.Device, is(usbdev.ErrNoUSBSupport), text("build usbflash with a USB backend: make build (on Linux pure Go, no library needed; elsewhere cgo and libusb-1.0); sim:, file: and disk: targets still work")},
		{failure.Device, is(usbdev.ErrNoLibusb), text(libusbAdvice(runtime.GOOS))},
		{failure.Device, is(usbdev.ErrSystemDriver), text(systemDriverAdvice(runtime.GOOS))},
		{failure.Device, is(usbdev.ErrNoUSBAccess), text("give this container or VM USB passthrough, or run usbflash on the host; sim:, file: and disk: targets still work")},
		{failure.Device, is(usbdev.ErrPermission), permissionAdvice},
		{failure.Device, is(diskdev.ErrPermission), from(diskPermissionAdvice)},
		{failure.Device, is(usbdev.ErrBusy), text("close other programs using it (another usbflash, a VM with USB passthrough); if the kernel driver holds it, unmount its partitions and retry")},
		{failure.Device, is(usbdev.ErrNoMemory), text("use a smaller --transfer-size or fewer --buffers, or raise the limit in /sys/module/usbcore/parameters/usbfs_memory_mb (16 MiB by default)")},
		{failure.Device, is(usbdev.ErrOverflow), text("its state is unknown: unplug the reader, plug it in again, and run the command again")},
		{failure.Device, is(usbdev.ErrDeviceChanged), text("run `usbflash list` again and choose the reader you mean")},
		{failure.Device, is(usbdev.ErrDescriptorsChanged), text("run `usbflash list` again")},
		{failure.Device, is(usbdev.ErrNotFound), text("it was unplugged or re-enumerated; run `usbflash list` again")},
		{failure.Device, is(usbdev.ErrReenumerationLost), text("unplug the reader and plug it in again")},
		{failure.Device, is(usbdev.ErrListFailed), text("check that /sys/bus/usb and /dev/bus/usb are readable")},
		{failure.Device, is(usbdev.ErrReattachFailed), text("unplug and replug the reader to get its /dev/sdX node back")},
		{failure.Device, is(usbdev.ErrClosed), text("usbflash used a device it had closed, which is a bug: please report it")},
		{failure.Device, is(usbms.ErrNoDevice), text("reconnect the reader and run the command again")},
		{failure.Device, func(err error) bool { return usbms.IsNoMedium(err) && !errors.Is(err, usbms.ErrMediumChanged) }, text("insert a card and run the command again")},
		{failure.Device, usbms.IsMediumChanged, text("insert the card again and write the whole image again")},
		{failure.Device, is(usbms.ErrNotReady), text("take the card out and insert it again")},
		{failure.Device, is(usbms.ErrCapacityOffByOne), text(capacityAdvice)},
		{failure.Device, is(usbms.ErrInitialRead10), text(initialRead10Advice)},
		{failure.Device, is(usbms.ErrRecoveryFailed), text("unplug the reader, plug it in again, and run the command again")},
		{failure.Device, asIf(func(e *pipeline.DeviceError) bool { return e.Op == pipeline.OpSync }), text("check that the card is still inserted, then write again")},
		{failure.Device, usbms.IsMediumError, text("use another card")},
		{failure.Device, as[*pipeline.DeviceError](), text("check that the card is inserted and the reader connected, then run the command again")},

		{failure.Fake, as[*fakecheck.FakeError](), from(func(e *fakecheck.FakeError) string {
			return fmt.Sprintf("the card is counterfeit: return it; to use it all the same, partition it to at most its first %d bytes", e.Result.Usable)
		})},

		{failure.Interrupted, as[*session.VerifyInterruptedError](), from(func(e *session.VerifyInterruptedError) string {
			return fmt.Sprintf("the image is on the card: `usbflash verify %s %s` checks it", shellWord(e.Image), shellWord(e.Target))
		})},
		{failure.Interrupted, as[*session.CustomizeInterruptedError](), from(customizeAdvice)},
		{failure.Interrupted, as[*pipeline.CancelledError](), from(cancelledAdvice)},
		{failure.Interrupted, as[*region.RestoreError](), from(restoreAdvice)},
		{failure.Interrupted, as[*fakecheck.RestoreError](), from(checkRestoreAdvice)},
	}
}

// refusalsAdvice is the advice for several cards of which some were
// refused: to write the others, or what frees the one refusal.
func refusalsAdvice(e *session.RefusedError) string {
	if e.Some() {
		return "pass --skip-refused to write the others"
	}
	return hint(e.Refused[0])
}

// noSignedSumAdvice is for an image a keyring found no signed sum for:
// what the keyring needs, or the sum the user vouches for instead.
func noSignedSumAdvice(e *image.NoSignedSumError) string {
	if e.Stdin {
		return "save the image to a file beside its publisher's signed checksum list, or give the sum you trust with --sha256 instead of --sha256-keyring"
	}
	return "put the publisher's signed checksum list (and its signature) beside the image, or give the sum you trust with --sha256 instead of --sha256-keyring"
}

// firstZeroedAdvice is for a card left unbootable because it does not
// hold its image: what to do about the difference, and a warning when
// the card could not be made unbootable.
func firstZeroedAdvice(e *session.FirstZeroedError) string {
	advice := hint(e.Err)
	if !e.Zeroed() {
		return "do not boot the card: it may boot bytes that are wrong; " + advice
	}
	return advice
}

// cancelledAdvice is to run a write again that left part of an image on
// the card; nothing else that was stopped needs advice.
func cancelledAdvice(e *pipeline.CancelledError) string {
	if e.Phase == pipeline.PhaseWrite && (e.Bytes > 0 || e.LBA > 0) {
		return "run the write again"
	}
	return ""
}

// checkRestoreAdvice says how to put back what a check could not.
func checkRestoreAdvice(e *fakecheck.RestoreError) string {
	if e.Kept.Path == "" {
		return "the card may be failing: copy what matters off it"
	}
	// The command on a line of its own, last: it works pasted whole.
	return fmt.Sprintf("keep both files until they are back; put them back with this command:\n  usbflash restore %s %s", shellWord(e.Kept.Path), shellWord(e.Target))
}

// customizeAdvice gives the two commands that end a customisation in
// place that stopped: one finishes it, the other puts the card back.
func customizeAdvice(e *session.CustomizeInterruptedError) string {
	t := shellWord(e.Target)
	return fmt.Sprintf("keep the four files until one is used; finish the customisation with\n  usbflash restore %s %s\nor put the card back as it was with\n  usbflash restore %s %s",
		shellWord(e.Finish.Path), t, shellWord(e.Undo.Path), t)
}

// libusbAdvice says how to install the libusb-1.0 a build that loads it
// at run time needs, on each system.
func libusbAdvice(goos string) string {
	switch goos {
	case "darwin":
		return "install libusb with Homebrew (brew install libusb), or set USBFLASH_LIBUSB to the path of a libusb-1.0.0.dylib; sim:, file: and disk: targets still work"
	case "windows":
		return "put libusb-1.0.dll (libusb's Windows release, the build for this usbflash.exe's architecture) beside usbflash.exe or in a directory on PATH, or set USBFLASH_LIBUSB to its path; sim:, file: and disk: targets still work"
	}
	return "install libusb-1.0 (apt-get install libusb-1.0-0), or set USBFLASH_LIBUSB to the path of libusb-1.0.so.0; sim:, file: and disk: targets still work"
}

// systemDriverAdvice says how to let usbflash take a reader the system's
// own mass-storage driver holds.
func systemDriverAdvice(goos string) string {
	switch goos {
	case "darwin":
		return "eject the card's volumes (diskutil unmountDisk /dev/diskN) and run usbflash with sudo, with Homebrew's libusb 1.0.25 or later"
	case "windows":
		return "bind the reader to WinUSB with Zadig (Options > List All Devices, choose the reader, WinUSB, Replace Driver); Windows then no longer shows its cards as drives, until the driver is put back in Device Manager"
	}
	return "unmount the card's partitions and run the command again"
}

// permissionAdvice says what would give access to a reader: the udev rule
// usbflash's packages install (to a group an administrator adds users to,
// or in its opt-in variant to the seat's user), or sudo.
func permissionAdvice(err error) string {
	var e *drive.AccessError
	errors.As(err, &e)
	switch {
	case e != nil && e.Group != "":
		return fmt.Sprintf("%s opens readers to the group %s: an administrator adds you to it (sudo usermod -aG %s $USER, then log in again), or run with sudo", e.Rule, e.Group, e.Group)
	case e != nil && e.Rule != "":
		return fmt.Sprintf("%s opens readers to the user at the seat (a local login) only: over ssh or on a station without a seat, enable its group rule (its comments say how), or run with sudo", e.Rule)
	}
	return "install usbflash's package: its udev rule (" + drive.RuleName + ") opens readers to the group " + drive.RuleGroup + ", which an administrator adds users to; or run with sudo"
}

// diskPermissionAdvice says what gives the right a disk: target needs,
// as the system that refused it wants it given.
func diskPermissionAdvice(e *diskdev.PermissionError) string {
	switch e.Need {
	case "an administrator":
		return "run usbflash from a terminal opened with Run as administrator"
	case "root":
		return "run it with sudo"
	}
	return "give an administrator's name and password when macOS asks, or run it with sudo"
}

// notAnImageAdvice says how to get the image out of what an archive
// holds instead.
func notAnImageAdvice(e *image.Error) string {
	if e.Container != "" {
		return containerAdvice(e.Container)
	}
	return fmt.Sprintf("decompress the outer %s first, then write the inner file", e.Format)
}

// containerAdvice says how to get a disk image out of a container usbflash
// does not decode (imagesrc.UnsupportedContainers names them).
func containerAdvice(container string) string {
	if advice, ok := map[string]string{
		"7z archive":               "extract the image from the inner archive first (7z x FILE), then write the .img",
		"zip archive":              "extract the image from the inner archive first (unzip FILE), then write the .img",
		"RAR archive":              "extract the image first (unrar x FILE)",
		"lzip stream":              "decompress it first (lzip -d FILE)",
		"lzop stream":              "decompress it first (lzop -d FILE)",
		"compress (.Z) stream":     "decompress it first (uncompress FILE)",
		"qcow2 disk image":         "convert it first (qemu-img convert -O raw FILE out.img)",
		"VMDK disk image":          "convert it first (qemu-img convert -O raw FILE out.img)",
		"VHDX disk image":          "convert it first (qemu-img convert -O raw FILE out.img)",
		"Android sparse image":     "convert it first (simg2img FILE out.img)",
		"tar archive":              "extract the image from it first (tar -xf FILE), then write the .img",
		"lzma (lzma_alone) stream": "decompress it first (xz -d --format=lzma FILE)",
		"brotli stream":            "decompress it first (brotli -d FILE)",
	}[container]; ok {
		return advice
	}
	return "turn it into a raw disk image first"
}

// restoreAdvice says how to put back a region --preserve could not.
func restoreAdvice(e *region.RestoreError) string {
	if e.File == "" {
		return "the region's old bytes are lost: restore them from a backup if you have one"
	}
	disk, how := e.Disk, ""
	switch {
	case disk == "":
		disk, how = "DISK", ", DISK being the reader's disk, which `usbflash list` shows as kernel: /dev/sdX"
	case e.Claimed:
		// A usb: reader's disk as the kernel had made it before the
		// claim: it comes back when the reader is let go, usually
		// under that name.
		how = fmt.Sprintf(" (%s was the reader's disk before usbflash claimed it: `usbflash list` shows whether it still is)", disk)
	}
	bs := int64(max(e.BlockSize, 1))
	// The command on a line of its own, last: it works pasted whole.
	return fmt.Sprintf("put them back with this command%s:\n  dd if=%s of=%s bs=%d seek=%d conv=notrunc,fsync",
		how, shellWord(e.File), shellWord(disk), bs, e.Region.Offset/bs)
}

// shellWord is s as one word of a POSIX shell command: as it is when it
// holds only what paths usually hold, else in single quotes.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:=@%", r)) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// inUseAdvice says what frees a disk the system uses in these ways.
func inUseAdvice(uses []drive.Use) string {
	verbs := map[drive.Use]string{
		drive.UseMounted:   "unmount it",
		drive.UseSwap:      "swapoff it",
		drive.UseHeld:      "close the dm-crypt, LVM or RAID device that holds it",
		drive.UseOpenFiles: "quit the programs that have files open on it",
	}
	var advice []string
	for _, u := range uses {
		advice = append(advice, verbs[u])
	}
	if len(advice) == 0 {
		return "close what uses it"
	}
	return strings.Join(advice, " and ")
}

// factsAndAdvice is err's facts and then its advice on one line, for a
// note in a table (list's) rather than a failure of its own.
func factsAndAdvice(err error) string {
	msg, advice := explain(err)
	if advice == "" {
		return msg
	}
	return msg + "; " + advice
}

// statedSizeAdvice is for an image whose size is not the one its catalog
// entry states: the file decoded whole, so the entry is the one to doubt.
const statedSizeAdvice = "the archive is whole: the catalog's entry does not describe the file at its URL; load the catalog again, and if it still says so, tell its publisher"

// checksumListAdvice is for a checksum list that cannot be used.
const checksumListAdvice = "download the checksum list again, or give the sum the publisher lists with --sha256, or pass --no-sha256 to write without it"

// capacityAdvice is for a reader that refuses the last block it reports.
const capacityAdvice = "if the card is one block smaller than the reader says, pass --quirks VID:PID:c (VID:PID from `usbflash list`), as Linux's usb-storage.quirks= takes it"

// initialRead10Advice is for a reader that fails READ(10)s after a card
// goes in.
const initialRead10Advice = "pass --quirks VID:PID:n (VID:PID from `usbflash list`), as Linux's usb-storage.quirks= takes it: a READ(10) that fails is then repeated"

// oneMediumAdvice is for a reader whose LUNs answer for one medium; id is
// its VID:PID.
func oneMediumAdvice(id string) string {
	return fmt.Sprintf("pass --quirks %s:s (VID:PID from `usbflash list`), as Linux's usb-storage.quirks= takes it, and name no LUN", id)
}

// noticeAdvice is the advice a reader's notice carries ("" for none): a
// reader that failed large commands is told how to start at the size
// that works.
func noticeAdvice(n *observe.Notice) string {
	if n == nil {
		return ""
	}
	id := n.USBID
	if id == "" {
		id = "VID:PID"
	}
	if n.Kind == observe.NoticeOneMedium {
		return oneMediumAdvice(id)
	}
	if n.Kind != observe.NoticeTransferCap || n.Cap <= 0 {
		return ""
	}
	size := units.FormatSize(n.Cap)
	if n.Cap == 64*512 {
		return fmt.Sprintf("pass --transfer-size %s, or --quirks %s:m (as Linux's usb-storage.quirks=), to start there", strings.ReplaceAll(size, " ", ""), id)
	}
	return fmt.Sprintf("pass --transfer-size %s to start there", strings.ReplaceAll(size, " ", ""))
}
