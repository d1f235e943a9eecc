package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/usbflash/usbflash/blockdev"
	"github.com/usbflash/usbflash/cardbench"
	"github.com/usbflash/usbflash/drive"
	"github.com/usbflash/usbflash/failure"
	"github.com/usbflash/usbflash/fakecheck"
	"github.com/usbflash/usbflash/filedev"
	"github.com/usbflash/usbflash/flash"
	"github.com/usbflash/usbflash/imagedst"
	"github.com/usbflash/usbflash/imagesrc"
	"github.com/usbflash/usbflash/internal/outfile"
	"github.com/usbflash/usbflash/internal/units"
	"github.com/usbflash/usbflash/pipeline"
	"github.com/usbflash/usbflash/region"
	"github.com/usbflash/usbflash/usbms"
	"github.com/usbflash/usbflash/usbms/sim"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// classifyDomainError sorts the pipeline's and the devices' typed errors
// into exit codes.
func classifyDomainError(err error) int {
	var (
		memory   *flash.MemoryError
		report   *flash.ReportError
		bmapErr  *flash.BlockMapError
		imageErr *flash.ImageError
		refusedN *flash.RefusedError
		mismatch *imagesrc.ChecksumMismatchError
		shaArg   *flash.ChecksumArgError
		src      *imagesrc.Error
		size     *pipeline.ImageSizeError
		capacity *pipeline.CapacityError
		verify   *pipeline.VerifyError
		device   *pipeline.DeviceError
		plan     *cardbench.PlanError
		out      *outfile.Error
		tooMuch  *imagedst.SizeError
	)
	switch {
	case errors.As(err, new(*fakecheck.FakeError)):
		return exitFake
	case errors.As(err, new(*region.CardMismatchError)):
		return exitRefused
	case errors.As(err, new(*region.ListError)):
		return exitUsage
	case errors.As(err, &mismatch):
		return exitSource
	case errors.As(err, &memory), errors.As(err, &report), errors.Is(err, flash.ErrReportFormat), errors.As(err, &shaArg),
		errors.As(err, &plan),
		errors.Is(err, flash.ErrBlockMapConflict), errors.Is(err, flash.ErrBlockMapOneCard),
		failure.Of(err) == failure.Usage:
		return exitUsage
	case errors.Is(err, imagedst.ErrExists), errors.As(err, &tooMuch):
		return exitRefused
	case errors.As(err, &out) && out.Op == outfile.OpCreate:
		// Found before the work: a name that cannot be a file.
		return exitUsage
	case errors.As(err, &out):
		// The disk an output file goes to failed, or is full.
		return exitDevice
	case errors.As(err, &bmapErr) && bmapErr.Unreadable:
		return exitSource
	case errors.As(err, &bmapErr), errors.As(err, &refusedN):
		return exitRefused
	case drive.KindOf(err) == drive.KindUsage:
		return exitUsage
	case drive.KindOf(err) == drive.KindRefused:
		return exitRefused
	case drive.KindOf(err) == drive.KindDevice:
		return exitDevice
	case errors.As(err, &verify), errors.As(err, new(*flash.SmallerCardError)):
		return exitVerify
	case errors.As(err, &capacity):
		// Also when the size was only found out by writing to the end
		// of the card: the image does not fit, nothing failed.
		return exitRefused
	case errors.As(err, &src), errors.As(err, &size), errors.As(err, &imageErr):
		return exitSource
	case errors.Is(err, errNotConfirmed), errors.Is(err, blockdev.ErrWriteProtected):
		return exitRefused
	case errors.As(err, &device):
		return exitDevice
	}
	var (
		command *usbms.CommandError
		usbErr  *usbdev.Error
	)
	switch {
	case usbms.HasSense(err), errors.As(err, &command), errors.As(err, &usbErr),
		errors.Is(err, usbms.ErrNoDevice), errors.Is(err, usbms.ErrStall),
		errors.Is(err, usbms.ErrInvalidCSW), errors.Is(err, usbms.ErrPhaseError),
		errors.Is(err, usbms.ErrRecoveryFailed),
		errors.Is(err, usbdev.ErrNoUSBSupport), errors.Is(err, usbdev.ErrNoUSBAccess):
		// The reader, the card or the USB stack: not our bug.
		return exitDevice
	}
	return exitInternal
}

// settingFlag is the flag that gives a library's setting; "" for one no
// flag gives.
func settingFlag(s failure.Setting) string {
	switch s {
	case usbms.SettingQuirks:
		return "--quirks"
	}
	return ""
}

// errNotConfirmed is a write nobody confirmed.
var errNotConfirmed = errors.New("not confirmed")

// explain is what a person reads of err: the facts, each once, and one
// piece of advice ("" when there is none worth giving).
func explain(err error) (msg, advice string) {
	msg = err.Error()
	// A failed block command is described by the pipeline (operation,
	// target, LBA range, byte offset) and again by the LUN under it:
	// keep the pipeline's words and the LUN's cause.
	var (
		dev *pipeline.DeviceError
		cmd *usbms.CommandError
	)
	if errors.As(err, &dev) && errors.As(dev.Err, &cmd) && cmd.Err != nil {
		msg = strings.Replace(msg, cmd.Error(), cmd.Err.Error(), 1)
	}
	// A library names the setting it could not work with; a person reads
	// the flag that gave it.
	var setting *failure.SettingError
	if errors.As(err, &setting) {
		if flag := settingFlag(setting.Setting); flag != "" {
			msg = strings.Replace(msg, setting.Error(), flag+" "+setting.Err.Error(), 1)
		}
	}
	// Wherever Go's words for a cancelled or expired context end up in a
	// library's text, a person reads English.
	msg = strings.NewReplacer(context.Canceled.Error(), "cancelled", context.DeadlineExceeded.Error(), "timed out").Replace(msg)
	return msg, hint(err)
}

// hint is the one place that turns an error's kind into advice: library
// errors state facts only, so each message carries one piece of advice,
// this table's. The first row that matches wins, so narrow kinds come
// before the broad ones that wrap them.
func hint(err error) string {
	var (
		cancelled *pipeline.CancelledError
		capacity  *pipeline.CapacityError
		verify    *pipeline.VerifyError
		imageSize *pipeline.ImageSizeError
		src       *imagesrc.Error
		target    *filedev.TargetError
		card      *sim.CardError
		device    *pipeline.DeviceError
		usbErr    *usbdev.Error
	)
	var cards *flash.CardsError
	if errors.As(err, &cards) {
		return "" // each card's own error is in the table
	}
	if h := sessionHint(err); h != "" {
		return h
	}
	var compare *compareError
	if errors.As(err, &compare) && errors.As(err, new(*pipeline.VerifyError)) {
		return "the card holds something other than this image (another image, or an older write): write the image to it if it should hold it"
	}
	var (
		fake    *fakecheck.FakeError
		fakeRes *fakecheck.RestoreError
		restore *region.RestoreError
		backupV *imagedst.VerifyError
		exists  *imagedst.ExistsError
		tooMuch *imagedst.SizeError
		output  *outfile.Error
		pipeV   *pipeline.VerifyError
	)
	switch {
	case errors.As(err, &fake):
		return fmt.Sprintf("the card is counterfeit: return it; to use it all the same, partition it to at most its first %d bytes", fake.Result.Usable)
	case errors.As(err, &fakeRes) && fakeRes.Kept.Path != "":
		// The command on a line of its own, last: it works pasted whole.
		return fmt.Sprintf("keep both files until they are back; put them back with this command:\n  usbflash restore %s %s", shellWord(fakeRes.Kept.Path), shellWord(fakeRes.Target))
	case errors.As(err, &fakeRes):
		return "the card may be failing: copy what matters off it"
	case errors.As(err, &restore):
		return restoreAdvice(restore)
	case errors.As(err, &backupV) && errors.As(backupV.Err, &pipeV):
		return fmt.Sprintf("read the card again, with another reader or USB port if you can; if the reads still differ, the card is failing: keep %s, it may be the best copy there is", backupV.Part)
	case errors.As(err, &exists):
		return "pass --force to overwrite it"
	case errors.As(err, &tooMuch):
		return "give a smaller --size, or leave it out to read the whole card"
	case errors.As(err, &output) && output.Op == outfile.OpCreate:
		return "name a file in a directory that exists and that you can write to"
	case errors.As(err, &output) && errors.Is(output.Err, syscall.ENOSPC):
		return "free space on that disk, or name a file on another one"
	case errors.As(err, &output):
		return "check the disk the file is written to, or name a file on another one"
	case errors.As(err, new(*flash.VerifyInterruptedError)):
		var vi *flash.VerifyInterruptedError
		errors.As(err, &vi)
		return fmt.Sprintf("the image is on the card: `usbflash verify %s %s` checks it", shellWord(vi.Image), shellWord(vi.Target))
	case errors.As(err, &cancelled):
		if cancelled.Phase == pipeline.PhaseWrite && (cancelled.Bytes > 0 || cancelled.LBA > 0) {
			return "run the write again"
		}
		return ""
	case errors.Is(err, context.Canceled):
		return ""
	// The USB layer's kinds, before the layers above that wrap them: the
	// end of the recovery ladder, a failed block command.
	case errors.Is(err, usbdev.ErrNoUSBSupport):
		return "build usbflash with a USB backend: make build (on Linux pure Go, no library needed; elsewhere cgo and libusb-1.0); sim: and file: targets still work"
	case errors.Is(err, usbdev.ErrNoUSBAccess):
		return "give this container or VM USB passthrough, or run usbflash on the host; sim: and file: targets still work"
	case errors.Is(err, usbdev.ErrPermission):
		vid := uint16(0)
		if errors.As(err, &usbErr) {
			vid = usbErr.VID
		}
		return fmt.Sprintf(`run with sudo, or add a udev rule such as SUBSYSTEM=="usb", ATTR{idVendor}=="%04x", MODE="0660", GROUP="plugdev"`, vid)
	case errors.Is(err, usbdev.ErrBusy):
		return "close other programs using it (another usbflash, a VM with USB passthrough); if the kernel driver holds it, unmount its partitions and retry"
	case errors.Is(err, usbdev.ErrNoMemory):
		return "use a smaller --transfer-size or fewer --buffers, or raise the limit in /sys/module/usbcore/parameters/usbfs_memory_mb (16 MiB by default)"
	case errors.Is(err, usbdev.ErrOverflow):
		return "its state is unknown: unplug the reader, plug it in again, and run the command again"
	case errors.Is(err, usbdev.ErrDeviceChanged):
		return "run `usbflash list` again and choose the reader you mean"
	case errors.Is(err, usbdev.ErrDescriptorsChanged):
		return "run `usbflash list` again"
	case errors.Is(err, usbdev.ErrNotFound):
		return "it was unplugged or re-enumerated; run `usbflash list` again"
	case errors.Is(err, usbdev.ErrReenumerationLost):
		return "unplug the reader and plug it in again"
	case errors.Is(err, usbdev.ErrListFailed):
		return "check that /sys/bus/usb and /dev/bus/usb are readable"
	case errors.Is(err, usbdev.ErrReattachFailed):
		return "unplug and replug the reader to get its /dev/sdX node back"
	case errors.Is(err, usbdev.ErrInUseUnknown):
		return "pass --force to skip this check if you are sure nothing uses the disk"
	case errors.Is(err, usbdev.ErrClosed):
		return "usbflash used a device it had closed, which is a bug: please report it"
	case errors.Is(err, errNotConfirmed):
		return "pass --yes to write without being asked"
	case errors.Is(err, blockdev.ErrWriteProtected):
		return "slide the card's lock switch to unlock it, or use another card"
	case errors.As(err, &capacity):
		return "use a larger card"
	case errors.As(err, new(*pipeline.InconsistentError)):
		return "the reader returned different data for the same blocks: write the image again through another reader or USB port"
	case errors.As(err, &verify):
		return "write the image again; if the difference stays, the card is failing or fake: use another card"
	case errors.As(err, &src):
		return imageAdvice(src)
	case errors.As(err, &target):
		return targetAdvice(target)
	case errors.As(err, &card):
		return cardAdvice(card)
	case errors.As(err, &imageSize):
		return "download the image again and compare its checksum"
	case errors.Is(err, usbms.ErrNoDevice):
		return "reconnect the reader and run the command again"
	case usbms.IsNoMedium(err) && !errors.Is(err, usbms.ErrMediumChanged):
		return "insert a card and run the command again"
	case usbms.IsMediumChanged(err):
		return "insert the card again and write the whole image again"
	case errors.Is(err, usbms.ErrNotReady):
		return "take the card out and insert it again"
	case errors.Is(err, usbms.ErrCapacityOffByOne):
		return capacityAdvice
	case errors.Is(err, usbms.ErrInitialRead10):
		return initialRead10Advice
	case errors.Is(err, usbms.ErrRecoveryFailed):
		return "unplug the reader, plug it in again, and run the command again"
	case errors.As(err, &device) && device.Op == "sync":
		return "check that the card is still inserted, then write again"
	case usbms.IsMediumError(err):
		return "use another card"
	case errors.As(err, &device):
		return "check that the card is inserted and the reader connected, then run the command again"
	}
	return ""
}

// targetAdvice is hint's row for a path that cannot be a file: target, by
// the reason.
func targetAdvice(e *filedev.TargetError) string {
	switch e.Reason {
	case filedev.BadSize:
		return "give a size that is a multiple of 512 bytes"
	case filedev.Missing:
		return "check the path"
	case filedev.NeedsSize:
		return fmt.Sprintf("give a size to create an image file, as in file:%s?size=8GiB", e.Path)
	case filedev.NoDirectory:
		return "create the directory first, or check the path"
	case filedev.NotADevice:
		return "check the device name"
	case filedev.WrongType:
		return "give a regular file or a block device"
	case filedev.WouldShrink:
		return fmt.Sprintf("drop size= or give at least %d", e.FileSize)
	case filedev.ShortReadOnly:
		return fmt.Sprintf("drop size= or give at most %d", e.FileSize)
	case filedev.SizedDevice:
		return "drop size=: a block device is as large as it is"
	case filedev.DeviceUnsupported:
		return "use a usb: target"
	}
	return ""
}

// cardAdvice is hint's row for a file that cannot be a sim: card, by the
// reason.
func cardAdvice(e *sim.CardError) string {
	switch e.Reason {
	case sim.CardNeedsSize:
		return "add ?size=64MiB (or another size) to create it"
	case sim.CardWouldShrink:
		return fmt.Sprintf("drop size= or give at least %d", e.FileSize)
	case sim.CardBadSize:
		return fmt.Sprintf("use size= to set its size, a positive multiple of %d bytes", e.Block)
	case sim.CardShortReadOnly:
		return fmt.Sprintf("drop size= or give at most %d", e.FileSize)
	case sim.CardNotAFile:
		return "give a file for the card, as in sim:card.img?size=64MiB"
	case sim.CardNoDirectory:
		return "create the directory first, or check the path"
	}
	return ""
}

// imageAdvice is hint's row for an image that cannot be written, by the
// kind of trouble.
func imageAdvice(e *imagesrc.Error) string {
	switch e.Kind {
	case imagesrc.Damaged:
		return "the file is damaged: download it again and compare its checksum"
	case imagesrc.Truncated:
		return "the file is incomplete: download it again and compare its checksum"
	case imagesrc.NotNamedFormat:
		return "download the image again: a failed download often saves an error page under the image's name"
	case imagesrc.Changed:
		return "write again once nothing modifies the image file"
	case imagesrc.Unreadable:
		return "check the disk or network share the image is on, or copy the image to a local disk, and run the command again"
	case imagesrc.Unsupported:
		return containerAdvice(e.Container)
	case imagesrc.NotAnImage:
		if e.Container != "" {
			return containerAdvice(e.Container)
		}
		return fmt.Sprintf("decompress the outer %s first, then write the inner file", e.Format)
	case imagesrc.Empty:
		return "download the image again and compare its checksum"
	case imagesrc.UnsupportedEntry:
		return "extract it first (unzip or 7z), then write the extracted file"
	case imagesrc.Ambiguous:
		return "extract the one you want (unzip FILE NAME) and write that"
	case imagesrc.NeedsFile:
		return "save it to a file first, or pipe `unzip -p FILE` instead"
	case imagesrc.UnsupportedFeature:
		return fmt.Sprintf("the file is not damaged: decompress it with the %s program first, then write the decompressed image", e.Format)
	}
	return ""
}

// containerAdvice says how to get a disk image out of a container usbflash
// does not decode (imagesrc.UnsupportedContainers names them).
func containerAdvice(container string) string {
	switch container {
	case "7z archive":
		return "extract the image first (7z x FILE)"
	case "RAR archive":
		return "extract the image first (unrar x FILE)"
	case "lz4 stream", "lz4 legacy stream":
		return "decompress it first (lz4 -d FILE)"
	case "lzip stream":
		return "decompress it first (lzip -d FILE)"
	case "lzop stream":
		return "decompress it first (lzop -d FILE)"
	case "compress (.Z) stream":
		return "decompress it first (uncompress FILE)"
	case "qcow2 disk image", "VMDK disk image", "VHDX disk image":
		return "convert it first (qemu-img convert -O raw FILE out.img)"
	case "Android sparse image":
		return "convert it first (simg2img FILE out.img)"
	case "tar archive":
		return "extract the image from it first (tar -xf FILE), then write the .img"
	case "lzma (lzma_alone) stream":
		return "decompress it first (xz -d --format=lzma FILE)"
	case "brotli stream":
		return "decompress it first (brotli -d FILE)"
	}
	return "turn it into a raw disk image first"
}

// sourceError classifies an error from opening the image, which already
// names it.
func sourceError(err error) error {
	var src *imagesrc.Error
	if errors.As(err, &src) {
		return err
	}
	return &codedError{exitSource, err}
}

// sessionHint is the advice for the refusals and mistakes of the target
// and flash packages ("" for others).
func sessionHint(err error) string {
	var (
		te       *drive.Error
		refusedN *flash.RefusedError
		bmapErr  *flash.BlockMapError
		memory   *flash.MemoryError
		report   *flash.ReportError
		plan     *cardbench.PlanError
	)
	switch {
	case errors.As(err, &plan):
		return planAdvice(plan)
	case errors.As(err, &refusedN) && refusedN.Some():
		return "pass --skip-refused to write the others"
	case errors.As(err, &refusedN):
		return sessionHint(refusedN.Refused[0])
	case errors.As(err, &memory):
		return "use a smaller --transfer-size, fewer --buffers or a smaller --lag"
	case errors.As(err, new(*imagesrc.ChecksumMismatchError)):
		return "download the image again (with its checksum) and write again"
	case errors.As(err, new(*flash.ChecksumArgError)):
		return "give the 64 hexadecimal digits the publisher lists, or --no-sha256"
	case errors.As(err, new(*imagesrc.ChecksumListError)), errors.As(err, new(*imagesrc.ChecksumConflictError)):
		return "download the checksum list again, or give the sum the publisher lists with --sha256, or pass --no-sha256 to write without it"
	case errors.As(err, &report):
		return "name a report file in a directory you can write to"
	case errors.Is(err, flash.ErrReportFormat):
		return "name a .json or .csv file"
	case errors.Is(err, flash.ErrBlockMapOneCard):
		return "give one TARGET, without --all, --watch or --report"
	case errors.Is(err, flash.ErrBlockMapConflict):
		return "pass one of them"
	case errors.As(err, &bmapErr) && !bmapErr.Unreadable:
		return "pass --no-bmap to write every byte"
	case !errors.As(err, &te):
		return ""
	case errors.Is(err, drive.ErrInUse):
		return inUseAdvice(te.Uses) + " first, or pass --force if you are sure"
	case errors.Is(err, drive.ErrBusy):
		return "wait for it to finish"
	case errors.Is(err, drive.ErrTooSmallImage):
		return "pass --force to write it anyway"
	case errors.Is(err, drive.ErrNotFound):
		return "run 'usbflash list'"
	}
	return ""
}

// restoreAdvice says how to put back a region --preserve could not.
func restoreAdvice(e *region.RestoreError) string {
	if e.File == "" {
		return "the region's old bytes are lost: restore them from a backup if you have one"
	}
	disk := "DISK"
	if p, ok := strings.CutPrefix(e.Device, "file:"); ok {
		disk = p
	} else if p, ok := strings.CutPrefix(e.Device, "sim:"); ok {
		disk = strings.TrimSuffix(p, "/0")
	}
	bs := int64(max(e.BlockSize, 1))
	// The command on a line of its own, last: it works pasted whole.
	return fmt.Sprintf("put them back with this command:\n  dd if=%s of=%s bs=%d seek=%d conv=notrunc,fsync",
		shellWord(e.File), shellWord(disk), bs, e.Region.Offset/bs)
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

// planAdvice is the advice for a bench plan that does not fit, by reason.
func planAdvice(e *cardbench.PlanError) string {
	switch e.Reason {
	case cardbench.SizeOverMemory:
		return fmt.Sprintf("give --sizes of at most %s", units.FormatSize(e.Limit))
	case cardbench.PreserveOverMemory:
		return fmt.Sprintf("give a --region of at most %s, or leave out --preserve if its data may be lost", units.FormatSize(e.Limit))
	case cardbench.SizeNotBlocks:
		return fmt.Sprintf("give --sizes in multiples of %d bytes", e.Limit)
	case cardbench.SizeOverCard:
		return fmt.Sprintf("give --sizes of at most %s", units.FormatSize(e.Limit))
	case cardbench.SizeOverRegion:
		return "give smaller --sizes or a longer --region"
	case cardbench.RegionNotInCard:
		return fmt.Sprintf("give a --region of whole blocks that ends within %d bytes", e.Limit)
	}
	return ""
}

// inUseAdvice says what frees a disk the system uses in these ways.
func inUseAdvice(uses []drive.Use) string {
	verbs := map[drive.Use]string{
		drive.UseMounted: "unmount it",
		drive.UseSwap:    "swapoff it",
		drive.UseHeld:    "close the dm-crypt, LVM or RAID device that holds it",
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

// capacityAdvice is for a reader that refuses the last block it reports.
const capacityAdvice = "if the card is one block smaller than the reader says, pass --quirks VID:PID:c (VID:PID from `usbflash list`), as Linux's usb-storage.quirks= takes it"

// initialRead10Advice is for a reader that fails READ(10)s after a card
// goes in.
const initialRead10Advice = "pass --quirks VID:PID:n (VID:PID from `usbflash list`), as Linux's usb-storage.quirks= takes it: a READ(10) that fails is then repeated"

// noticeAdvice is the advice a reader's notice carries ("" for none): a
// reader that failed large commands is told how to start at the size
// that works.
func noticeAdvice(n *usbms.Notice) string {
	if n == nil || n.Kind != usbms.NoticeTransferCap || n.Cap <= 0 {
		return ""
	}
	size := units.FormatSize(n.Cap)
	id := n.USBID
	if id == "" {
		id = "VID:PID"
	}
	if n.Cap == 64*512 {
		return fmt.Sprintf("pass --transfer-size %s, or --quirks %s:m (as Linux's usb-storage.quirks=), to start there", strings.ReplaceAll(size, " ", ""), id)
	}
	return fmt.Sprintf("pass --transfer-size %s to start there", strings.ReplaceAll(size, " ", ""))
}
