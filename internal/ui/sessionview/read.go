package sessionview

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image/imagedst"
	"github.com/usbflash/usbflash/internal/lib/parttable"
	"github.com/usbflash/usbflash/internal/lib/units"
	"github.com/usbflash/usbflash/internal/session"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

// Backup is the presenter of a backup session's events.
func Backup(rep termui.Reporter, w Words) session.Observer {
	return session.ObserverFunc(func(e session.Event) {
		switch e := e.(type) {
		case session.BackupStarted:
			rep.Event(&jsonevents.ReadStart{
				Command: jsonevents.CommandRead,
				Target:  e.Target, Out: e.Out, Format: e.Format, TransferSize: int64(e.TransferSize), Buffers: e.Buffers,
			}, fmt.Sprintf("Backing %s up to %s (%s) ...", e.Target, e.Out, e.Format))
		case session.InUse:
			msg := inUseNote(w, e.Err)
			rep.Event(jsonevents.NewNote(msg), msg)
		case session.ExtentChosen:
			if msg := extentNote(e.Card, e.Extent); msg != "" {
				rep.Event(jsonevents.NewNote(msg), msg)
			}
		default:
			Card(rep, w, e)
		}
	})
}

// BackedUp is the summary of a backup written to out.
func BackedUp(rep termui.Reporter, res *session.BackupResult, out string) {
	read := res.Read
	sum := &jsonevents.ReadSummary{
		Command: jsonevents.CommandRead,
		Bytes:   read.Bytes, Reads: read.Reads, ElapsedS: read.Elapsed.Seconds(), Rate: termui.Rate(read.Bytes, read.Elapsed),
		SHA256: hex.EncodeToString(read.SHA256[:]), Out: out, Format: res.Format, OutBytes: res.Written,
		BMap: res.BMap, MappedBytes: res.MappedBytes, Bound: jsonevents.BoundOf(read.Bound), BoundRatio: read.BoundRatio,
		PartitionTable: res.Extent.Table,
	}
	text := []string{
		fmt.Sprintf("Read %s in %s (%s), %s", units.FormatBytes(read.Bytes), read.Elapsed.Round(time.Millisecond),
			units.FormatRate(sum.Rate), termui.Plural(read.Reads, "command")),
		fmt.Sprintf("Wrote %s (%s, %s) and its block map %s (%s of the image is not zero)", out, res.Format, units.FormatSize(res.Written), res.BMap, units.FormatSize(res.MappedBytes)),
		termui.ReadBoundLine(read),
	}
	if v := res.Verify; v != nil {
		sum.Verified = true
		sum.VerifyElapsedS = ptr(v.Elapsed.Seconds())
		text = append(text, fmt.Sprintf("Verified: a second read of %s matches (%s)", units.FormatSize(v.Bytes), v.Elapsed.Round(time.Millisecond)))
	}
	text = append(text, "SHA-256 "+sum.SHA256)
	rep.Event(sum, strings.Join(text, "\n"))
}

// inUseNote says that a disk read through the kernel is in use, which
// write refuses and read only warns of: its file systems can change while
// they are read.
func inUseNote(w Words, inUse error) string {
	var uses []drive.Use
	if te := (*drive.Error)(nil); errors.As(inUse, &te) {
		uses = te.Uses
	}
	return fmt.Sprintf("%v: what is read may change meanwhile, and the backup be inconsistent; %s first for a consistent one", inUse, w.InUseAdvice(uses))
}

// extentNote says how the extent to read was decided from the card's
// partition table ("" when it was not).
func extentNote(name string, e imagedst.Extent) string {
	switch e.Table {
	case "":
		return ""
	case "none":
		if e.Damaged != nil {
			return fmt.Sprintf("%s: %v: reading the whole card, as for a card without one", name, e.Damaged)
		}
		return fmt.Sprintf("%s has no partition table: reading the whole card", name)
	case parttable.GPT:
		return fmt.Sprintf("GPT: reading up to the end of the last partition, %s; the backup GPT at the end of the card is not included (sgdisk -e rebuilds it after a restore)", units.FormatSize(e.Size))
	}
	return fmt.Sprintf("MBR: reading up to the end of the last partition, %s of %s", units.FormatSize(e.Size), units.FormatSize(e.Capacity))
}
