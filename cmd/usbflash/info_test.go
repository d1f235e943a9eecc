package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/ui/jsonevents"
	"github.com/usbflash/usbflash/internal/ui/readerinfo"
	"github.com/usbflash/usbflash/usbms/usbdev"
)

// notes returns the note events of a --json run.
func notes(t *testing.T, stdout string) []jsonevents.Note {
	t.Helper()
	var out []jsonevents.Note
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev jsonevents.Note
		if err := json.Unmarshal([]byte(line), &ev); err == nil && ev.Event == jsonevents.NameNote {
			out = append(out, ev)
		}
	}
	return out
}

// TestInfoCommand: what info says of a card (its LUN, its reader, an empty
// slot described rather than failed), and each quirk flag in force with
// where it came from: the table (by the sim's VID:PID), the environment,
// --quirks, the sim's quirks=, or what was learned driving the reader;
// which flags win is usbms's (TestQuirkOverrides).
func TestInfoCommand(t *testing.T) {
	card8 := writeFile(t, "card8.img", make([]byte, 8<<20)) // info creates nothing
	r := runCLI(t, "info", "--json", "sim:"+card8+"?size=8MiB&block=4096&serial=XYZ&vid=0bda&pid=0158&bcd=5888")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rep readerinfo.Target
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	// The card's VPD serial is not asked for, as Linux asks a USB disk
	// for no VPD page; the reader's USB serial names it.
	if rep.LUN == nil || rep.LUN.Bytes != 8<<20 || rep.LUN.BlockSize != 4096 || rep.LUN.Serial != "" ||
		rep.SimReader == nil || *rep.SimReader != (readerinfo.SimReader{VID: "0bda", PID: "0158", BCDDevice: "5888", Serial: "XYZ"}) || rep.Quirks != nil {
		t.Errorf("info = %+v / %+v / %+v", rep, rep.LUN, rep.SimReader)
	}
	// Asked for VPD pages (a flag the kernel has no letter for), by the
	// sim's own quirks=.
	r = runCLI(t, "info", "--json", "sim:"+card8+"?block=4096&serial=XYZ&quirks=TRY_VPD_PAGES")
	rep = readerinfo.Target{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.LUN == nil || rep.LUN.Serial != "XYZ" || rep.Quirks == nil || rep.Quirks.Flags != "TRY_VPD_PAGES" || rep.Quirks.From[0].Source != "sim quirks=" {
		t.Errorf("info with quirks=TRY_VPD_PAGES: %+v / %+v", rep.LUN, rep.Quirks)
	}
	r = runCLI(t, "info", "sim:"+card8+"?nomedium=1")
	if r.code != exitOK || !strings.Contains(r.stdout, "no medium") { // described, not failed
		t.Errorf("empty slot: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	card := writeFile(t, "card.img", make([]byte, 4<<20))
	datafab := "sim:" + card + "?vid=07c4&pid=a4a5&bcd=0100"
	info := func(env string, args ...string) (readerinfo.Target, string) {
		t.Helper()
		t.Setenv("USBFLASH_QUIRKS", env)
		r := runCLI(t, append([]string{"info", "--json"}, args...)...)
		if r.code != exitOK {
			t.Fatalf("info %v: exit %d: %s", args, r.code, r.stderr)
		}
		var rep readerinfo.Target
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		text := runCLI(t, append([]string{"info"}, args...)...).stdout
		return rep, text
	}
	rep, text := info("", datafab)
	if q := rep.Quirks; q == nil || q.Flags != "mr" || len(q.From) != 2 || q.From[0].Source != "table" ||
		!strings.Contains(q.From[0].Detail, "Simple Tech/Datafab / CF+SM Reader") || q.TransferCap != 32<<10 {
		t.Errorf("table: %+v", rep.Quirks)
	}
	if !strings.Contains(text, "m MAX_SECTORS_64") || !strings.Contains(text, "from table: 07c4:a4a5 0000-ffff") || !strings.Contains(text, "largest command") {
		t.Errorf("info text:\n%s", text)
	}
	rep, _ = info("07c4:a4a5:r", datafab)
	if q := rep.Quirks; q == nil || q.Flags != "r" || q.From[0].Source != "$USBFLASH_QUIRKS" {
		t.Errorf("environment: %+v", rep.Quirks)
	}
	rep, text = info("07c4:a4a5:r", "--quirks", "07c4:a4a5:w,TRY_VPD_PAGES", datafab)
	if q := rep.Quirks; q == nil || q.Flags != "w+TRY_VPD_PAGES" || q.From[0].Source != "--quirks" || q.From[1].Source != "--quirks" {
		t.Errorf("--quirks: %+v", rep.Quirks)
	}
	if !strings.Contains(text, "from --quirks: 07c4:a4a5:w,TRY_VPD_PAGES") {
		t.Errorf("info text:\n%s", text)
	}
	// Residue switched off because the reader lied is shown as learned.
	rep, _ = info("", "sim:"+card+"?residue=length")
	if q := rep.Quirks; q == nil || q.Flags != "r" || q.From[0].Source != "learned" || !strings.Contains(q.From[0].Detail, "INQUIRY moved all 36 bytes") {
		t.Errorf("learned: %+v", rep.Quirks)
	}
	// Malformed overrides are usage errors.
	t.Setenv("USBFLASH_QUIRKS", "")
	if r := runCLI(t, "info", "--quirks", "07c4:a4a5", datafab); r.code != exitUsage || !strings.Contains(r.stderr, "not VID:PID:FLAGS") {
		t.Errorf("bad --quirks: exit %d, %s", r.code, r.stderr)
	}
	t.Setenv("USBFLASH_QUIRKS", "zz")
	if r := runCLI(t, "info", datafab); r.code != exitUsage || !strings.Contains(r.stderr, "USBFLASH_QUIRKS") {
		t.Errorf("bad $USBFLASH_QUIRKS: exit %d, %s", r.code, r.stderr)
	}
}

// listReadersWithoutPermission: a reader this user may not open
// is listed all the same, marked, the kernel's disks of one the kernel
// holds shown from sysfs; what would give access is said once.
func listReadersWithoutPermission(t *testing.T) {
	denied := func(addr int) error {
		return &drive.AccessError{Reader: fmt.Sprintf("usb:1.%d", addr), Node: fmt.Sprintf("/dev/bus/usb/001/%03d", addr),
			Err: &usbdev.Error{Op: "opening", Kind: usbdev.ErrPermission, Err: syscall.EACCES}}
	}
	info := func(addr int) usbdev.Info {
		return usbdev.Info{VID: 0x46f4, PID: 0x0001, Bus: 1, Address: addr, PortPath: fmt.Sprintf("1-%d", addr), Supported: true}
	}
	found := []drive.Reader{
		{Index: 0, Info: info(4), Name: "usb:1.4", Access: denied(4)},
		{Index: 1, Info: info(5), Name: "usb:1.5", Access: denied(5), KernelDisks: []usbdev.KernelDisk{{LUN: 0, Node: "/dev/sdz", Size: 1 << 30}}},
		{Index: 2, Info: info(6), Name: "usb:1.6", KernelDisks: []usbdev.KernelDisk{{LUN: 0, Node: "/dev/sdy", Size: 1 << 30}}},
	}
	var reps []readerinfo.Reader
	for _, r := range found {
		reps = append(reps, readerinfo.DescribeReader(r, readerWords()))
	}
	var out bytes.Buffer
	readerinfo.PrintReaders(&out, reps)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[1], "usb:1.4") || !strings.HasSuffix(lines[1], "no permission") ||
		!strings.Contains(lines[2], "/dev/sdz") || !strings.Contains(lines[2], "no permission") || strings.Contains(lines[3], "no permission") {
		t.Errorf("list table:\n%s", out.String())
	}
	if strings.Contains(out.String(), "EACCES") || strings.Contains(out.String(), "permission denied") {
		t.Errorf("a bare errno in the table:\n%s", out.String())
	}
	b, _ := json.Marshal(reps)
	if strings.Count(string(b), `"no_permission":true`) != 2 {
		t.Errorf("list JSON %s", b)
	}
	note := accessNote(found)
	if want := "No permission to open 2 readers: " + installAdvice + "."; note != want {
		t.Errorf("note %q, want %q", note, want)
	}
	if accessNote(found[2:]) != "" {
		t.Error("a note where every reader may be opened")
	}
}

// TestListCommand: what list shows and says: readers, disks, and what it
// cannot list, without failing.
func TestListCommand(t *testing.T) {
	parallel(t,
		subtest{"without USB", listWithoutUSB},
		subtest{"disks", listShowsDisks},
		subtest{"readers without permission", listReadersWithoutPermission},
	)
}
