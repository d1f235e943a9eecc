//go:build e2e

package e2e

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTraceMatchesKernel holds usbflash to "send what Linux sends": in one
// boot per controller, the guest kernel's usbmon records every Bulk-Only
// command block wrapper that reaches each reader (a usb-storage and a
// usb-bot one) while first the kernel's own usb-storage + sd flash a card
// the way a user does with dd, and then usbflash lists, writes (with
// verify), reads and describes the same readers. Each trace is decoded into SCSI
// commands, and every command usbflash sent must be one the kernel sent
// the same device in that boot; SYNCHRONIZE CACHE(10) alone is tolerated
// (usbflash sends it when the caching page says write-back, as sd does,
// but whether the kernel path flushes depends on what the user ran).
// Transfer sizes are not compared: usbflash sends larger READs and WRITEs
// than the kernel on purpose; the table logged per reader shows both.
func TestTraceMatchesKernel(t *testing.T) {
	for _, c := range []Controller{XHCI, EHCI} {
		t.Run(string(c), func(t *testing.T) { traceCompare(t, c) })
	}
}

// traceReader is one reader of the trace boot.
type traceReader struct {
	serial, kind string
	bot          bool
	card         string
	dev          string // usbmon's "bus:device", e.g. "2:002"
}

func traceCompare(t *testing.T, c Controller) {
	t0 := time.Now()
	const cardSize = 16 << 20
	readers := []*traceReader{{serial: "TRSTOR", kind: "usb-storage"}, {serial: "TRBOT", kind: "usb-bot", bot: true}}
	spec := MachineSpec{Controller: c}
	for _, r := range readers {
		r.card = newCard(t, cardSize)
		spec.Readers = append(spec.Readers, Reader{Serial: r.serial, Bot: r.bot, LUNs: []LUN{{Backing: r.card}}})
	}
	m := boot(t, spec)
	kimg, uimg := makeImage(71, 6<<20), makeImage(72, 5<<20+3*512)
	kp, up := putImage(t, m, "k.img", kimg, "raw"), putImage(t, m, "u.img", uimg, "raw")
	guest(t, m, fmt.Sprintf("loadmod usbmon && mount -t debugfs none /sys/kernel/debug && cp %s /tmp/k.img && cp %s /tmp/u.img", kp, up))
	for _, r := range readers {
		out := guest(t, m, fmt.Sprintf(`for d in /sys/bus/usb/devices/*; do
	[ "$(cat $d/serial 2>/dev/null)" = %s ] && printf '%%d:%%03d\n' $(cat $d/busnum) $(cat $d/devnum)
done; true`, r.serial)).Stdout
		r.dev = strings.TrimSpace(out)
		if strings.Count(r.dev, ":") != 1 {
			t.Fatalf("reader %s: bus:device %q", r.serial, r.dev)
		}
	}

	// The kernel path: usb-storage probes the readers as it binds, dd
	// writes the image with O_DIRECT and fsync, reads it back, then the
	// whole card buffered; unbinding at the end is what the kernel sends
	// when a disk goes away (sd's flush of a write-back cache).
	mon := startUsbmon(t, m, "kernel")
	guest(t, m, "loadmod usb-storage sd_mod")
	for _, r := range readers {
		guest(t, m, fmt.Sprintf(`D=/dev/$(sdbyserial %s) || exit 1
dd if=/tmp/k.img of=$D bs=1M oflag=direct conv=fsync 2>/dev/null &&
dd if=$D of=/tmp/kback.img bs=1M count=6 iflag=direct 2>/dev/null &&
cmp /tmp/k.img /tmp/kback.img &&
dd if=$D of=/dev/null bs=1M 2>/dev/null && sync && rm /tmp/kback.img`, r.serial))
	}
	intfs := strings.Fields(guest(t, m, `cd /sys/bus/usb/drivers/usb-storage && for i in *:*; do echo $i; echo $i > unbind || exit 1; done`).Stdout)
	kernel := mon.stop(t, m)
	for _, r := range readers {
		checkCard(t, r.card, kimg)
	}

	// The usbflash path, with usb-storage unbound, so the trace holds
	// usbflash's commands alone.
	mon = startUsbmon(t, m, "usbflash")
	wantCode(t, usbflash(t, m, time.Minute, "list"), 0, "list")
	for _, r := range readers {
		tgt := serialTarget(r.serial)
		res := usbflash(t, m, 3*time.Minute, "write", "/tmp/u.img", tgt, "--yes")
		wantCode(t, res, 0, "write "+r.serial)
		res = usbflash(t, m, 3*time.Minute, "read", tgt, "/tmp/uback-"+r.serial+".img")
		wantCode(t, res, 0, "read "+r.serial)
		res = usbflash(t, m, time.Minute, "info", tgt)
		wantCode(t, res, 0, "info "+r.serial)
	}
	uf := mon.stop(t, m)
	// usbflash's image over the kernel's: the kernel's tail is still there.
	for _, r := range readers {
		checkCard(t, r.card, append(append([]byte(nil), uimg...), kimg[len(uimg):]...))
	}

	// The kernel takes the readers back, and after usbflash detached it
	// from one and let go of it, its disk comes back.
	for _, i := range intfs {
		guest(t, m, "echo "+i+" > /sys/bus/usb/drivers/usb-storage/bind")
	}
	for _, r := range readers {
		guest(t, m, "sdbyserial "+r.serial)
	}
	res := usbflash(t, m, time.Minute, "info", serialTarget(readers[0].serial))
	wantCode(t, res, 0, "info with usb-storage bound")
	guest(t, m, "sdbyserial "+readers[0].serial)

	for _, r := range readers {
		k, u := kernel.devs[r.dev], uf.devs[r.dev]
		if k == nil || len(k.cmds) == 0 || u == nil || len(u.cmds) == 0 {
			t.Errorf("%s %s (%s): no commands in a trace (kernel %v, usbflash %v)", c, r.kind, r.dev, k != nil, u != nil)
			continue
		}
		t.Logf("%s, %s reader %s (usbmon %s): SCSI commands, kernel path vs usbflash\n%s", c, r.kind, r.serial, r.dev, commandTable(k, u))
		t.Logf("%s, %s reader %s: control requests, kernel path vs usbflash\n%s", c, r.kind, r.serial, controlTable(k, u))
		t.Logf("%s, %s reader %s: first commands of the kernel's probe: %s", c, r.kind, r.serial, k.sequence(8))
		t.Logf("%s, %s reader %s: first commands of usbflash (list, then write): %s", c, r.kind, r.serial, u.sequence(8))
		t.Logf("%s, %s reader %s: last commands of the kernel path (dd's reads, sync, unbind): %s", c, r.kind, r.serial, k.sequence(-4))
		extra, tolerated := notSentByKernel(k, u)
		for _, e := range tolerated {
			t.Logf("%s %s reader: %s: tolerated", c, r.kind, e)
		}
		for _, e := range extra {
			t.Errorf("%s %s reader: %s", c, r.kind, e)
		}
	}

	// The comparison can fail: usbflash made to read VPD pages, which
	// Linux never asks of a USB disk, is caught.
	mon = startUsbmon(t, m, "vpd")
	res = usbflash(t, m, time.Minute, "info", "--quirks", qemuVID+":"+qemuPID+":TRY_VPD_PAGES", serialTarget(readers[1].serial))
	wantCode(t, res, 0, "info with TRY_VPD_PAGES")
	vpd := mon.stop(t, m)
	if d := vpd.devs[readers[1].dev]; d == nil {
		t.Errorf("%s: no commands in the TRY_VPD_PAGES trace", c)
	} else if extra, _ := notSentByKernel(kernel.devs[readers[1].dev], d); !strings.Contains(strings.Join(extra, "\n"), "INQUIRY VPD page 0x00") {
		t.Errorf("%s: usbflash with TRY_VPD_PAGES sent %s; the comparison found nothing Linux does not send: %q", c, d.sequence(20), extra)
	} else {
		t.Logf("%s: self-check: usbflash with TRY_VPD_PAGES is caught: %s", c, strings.Join(extra, "; "))
	}
	t.Logf("%s: boot and both paths took %v", c, time.Since(t0).Round(time.Second))
}

// notSentByKernel lists what usbflash sent a device (trace u) that the
// kernel did not send it (trace k): SCSI commands told apart as cdbKey
// does, and control requests by type and request. SYNCHRONIZE CACHE(10)
// is only tolerated: usbflash flushes a write-back cache after writing,
// as sd does, but whether the kernel path flushed depends on what the
// user ran.
func notSentByKernel(k, u *devTrace) (extra, tolerated []string) {
	kk := k.byKey()
	for key, s := range u.byKey() {
		switch {
		case kk[key] != nil:
		case s.op == opSyncCache10:
			tolerated = append(tolerated, fmt.Sprintf("usbflash sent %s %d times (%d failed), the kernel none", key, s.n, s.failed))
		default:
			extra = append(extra, fmt.Sprintf("usbflash sent %s (%d times), which the kernel did not send this device in the same boot", key, s.n))
		}
	}
	// Get Max LUN is the one control request either sends; a Bulk-Only
	// Reset or CLEAR_FEATURE would be recovery, which these readers never
	// need.
	kr := map[string]bool{}
	for _, s := range k.ctrl {
		kr[requestOf(s)] = true
	}
	for _, s := range u.ctrl {
		if !kr[requestOf(s)] {
			extra = append(extra, fmt.Sprintf("usbflash sent control request %s (%s), which the kernel did not send this device in the same boot", s, controlName(s)))
			kr[requestOf(s)] = true // once
		}
	}
	sort.Strings(extra)
	sort.Strings(tolerated)
	return extra, tolerated
}

// sequence names the first n commands, in order; the last -n for a
// negative n.
func (d *devTrace) sequence(n int) string {
	var cmds []*traceCmd
	if n >= 0 {
		cmds = d.cmds[:min(n, len(d.cmds))]
	} else {
		cmds = d.cmds[max(0, len(d.cmds)+n):]
	}
	var out []string
	for _, c := range cmds {
		s := cdbKey(c.cdb)
		if c.cdb[0] == 0x28 || c.cdb[0] == 0x2A {
			s += fmt.Sprintf(" %d B", c.length)
		}
		if c.status != 0 {
			s += fmt.Sprintf(" (status %d)", c.status)
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// usbmonCapture is a running reader of the guest's usbmon text interface
// for every bus (0u).
type usbmonCapture struct{ name, lost string }

const usbmonDir = "/sys/kernel/debug/usb/usbmon"

// startUsbmon starts reading usbmon into /tmp/mon-NAME.txt, and returns
// once usbmon counts the reader (events before that are not in it).
func startUsbmon(t *testing.T, m *Machine, name string) *usbmonCapture {
	t.Helper()
	out := guest(t, m, fmt.Sprintf(`S=%s
cat $S/0u >/tmp/mon-%s.txt 2>/dev/null </dev/null &
echo $! >/tmp/mon-%s.pid
i=0
while ! grep -q "nreaders 1 " $S/0s; do usleep 10000; i=$((i+1)); [ $i -lt 500 ] || exit 1; done
cat $S/0s`, usbmonDir, name, name)).Stdout
	return &usbmonCapture{name: name, lost: textLost(t, out)}
}

// textLost is the text_lost counter of usbmon's statistics file
// ("nreaders 1 events 123 text_lost 0").
func textLost(t *testing.T, stat string) string {
	t.Helper()
	f := strings.Fields(stat)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "text_lost" {
			return f[i+1]
		}
	}
	t.Fatalf("usbmon statistics without text_lost: %q", stat)
	return ""
}

// stop ends the capture and parses it. usbmon's text reader keeps a
// short queue and drops events when the reader falls behind: a capture
// that lost any is no proof, so the test fails.
func (c *usbmonCapture) stop(t *testing.T, m *Machine) *usbTrace {
	t.Helper()
	out := guest(t, m, fmt.Sprintf(`sleep 1; kill $(cat /tmp/mon-%s.pid); cat %s/0s; cp /tmp/mon-%s.txt /host/mon-%s.txt`, c.name, usbmonDir, c.name, c.name)).Stdout
	if lost := textLost(t, out); lost != c.lost {
		t.Fatalf("usbmon %s capture lost events (text_lost %s -> %s): the trace is incomplete", c.name, c.lost, lost)
	}
	b, err := os.ReadFile(filepath.Join(m.Share, "mon-"+c.name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := parseUsbmon(string(b))
	if err != nil {
		t.Fatalf("usbmon %s capture: %v", c.name, err)
	}
	return tr
}

// usbTrace is a usbmon capture by device ("bus:device").
type usbTrace struct{ devs map[string]*devTrace }

// devTrace is what one device was sent.
type devTrace struct {
	cmds []*traceCmd
	ctrl []string // control requests: "bmRequestType bRequest wValue wIndex wLength"
}

// traceCmd is one Bulk-Only command block wrapper and its CSW's status.
type traceCmd struct {
	tag    uint32
	length uint32 // dCBWDataTransferLength
	in     bool
	cdb    []byte
	status int // bCSWStatus; -1 when no CSW was seen
}

// parseUsbmon reads usbmon's text format ("u" files): the CBW of every
// 31-byte bulk OUT submission (its 32 bytes of data are shown) and the
// status of the CSW with the same tag. A 31-byte bulk OUT whose data
// usbmon did not show, or that is not a CBW, is an error: the command
// set would be incomplete.
func parseUsbmon(text string) (*usbTrace, error) {
	tr := &usbTrace{devs: map[string]*devTrace{}}
	byTag := map[string]map[uint32]*traceCmd{}
	for n, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		addr := strings.Split(f[3], ":")
		if len(addr) != 4 {
			return nil, fmt.Errorf("line %d: address %q", n+1, f[3])
		}
		dev := addr[1] + ":" + addr[2]
		d := tr.devs[dev]
		if d == nil {
			d = &devTrace{}
			tr.devs[dev] = d
			byTag[dev] = map[uint32]*traceCmd{}
		}
		data := func() []byte {
			for i, w := range f {
				if w == "=" {
					b, _ := hex.DecodeString(strings.Join(f[i+1:], ""))
					return b
				}
			}
			return nil
		}
		switch {
		case f[2] == "S" && (addr[0] == "Co" || addr[0] == "Ci") && f[4] == "s" && len(f) >= 10:
			d.ctrl = append(d.ctrl, strings.Join(f[5:10], " "))
		case f[2] == "S" && addr[0] == "Bo" && f[5] == "31":
			b := data()
			if len(b) < 31 || string(b[:4]) != "USBC" {
				return nil, fmt.Errorf("line %d: a 31-byte bulk OUT that is not a readable CBW: %q", n+1, line)
			}
			cbLen := int(b[14] & 0x1F)
			if cbLen == 0 || cbLen > 16 {
				return nil, fmt.Errorf("line %d: CBW with a %d-byte CDB", n+1, cbLen)
			}
			cmd := &traceCmd{tag: binary.LittleEndian.Uint32(b[4:]), length: binary.LittleEndian.Uint32(b[8:]),
				in: b[12]&0x80 != 0, cdb: append([]byte(nil), b[15:15+cbLen]...), status: -1}
			d.cmds = append(d.cmds, cmd)
			byTag[dev][cmd.tag] = cmd
		case f[2] == "C" && addr[0] == "Bi" && f[5] == "13":
			b := data()
			if len(b) == 13 && string(b[:4]) == "USBS" {
				if cmd := byTag[dev][binary.LittleEndian.Uint32(b[4:])]; cmd != nil {
					cmd.status = int(b[12])
				}
			}
		}
	}
	return tr, nil
}

const opSyncCache10 = 0x35

// cmdStats is what a trace holds of one kind of command.
type cmdStats struct {
	op        byte
	n, failed int
	maxLen    uint32
}

// byKey groups the commands by what tells them apart for Linux's sd
// (cdbKey).
func (d *devTrace) byKey() map[string]*cmdStats {
	out := map[string]*cmdStats{}
	for _, c := range d.cmds {
		k := cdbKey(c.cdb)
		s := out[k]
		if s == nil {
			s = &cmdStats{op: c.cdb[0]}
			out[k] = s
		}
		s.n++
		if c.status != 0 {
			s.failed++
		}
		s.maxLen = max(s.maxLen, c.length)
	}
	return out
}

// cdbKey names a command by its opcode and whatever in the CDB makes sd
// treat it as a different command: INQUIRY's EVPD bit and page, MODE
// SENSE's page, control and subpage, the service action of SERVICE
// ACTION IN(16) and MAINTENANCE IN, START STOP UNIT's start and eject bits,
// FUA on READ and WRITE. Addresses and lengths are left out.
func cdbKey(cdb []byte) string {
	b := func(i int) byte {
		if i < len(cdb) {
			return cdb[i]
		}
		return 0
	}
	mode := func(name string) string {
		s := fmt.Sprintf("%s page 0x%02X", name, b(2)&0x3F)
		if pc := b(2) >> 6; pc != 0 {
			s += fmt.Sprintf(" PC %d", pc)
		}
		if b(3) != 0 {
			s += fmt.Sprintf(" subpage 0x%02X", b(3))
		}
		if b(1)&0x08 != 0 {
			s += " DBD"
		}
		return s
	}
	rw := func(name string) string {
		if b(1)&0x08 != 0 {
			return name + " FUA"
		}
		return name
	}
	switch op := b(0); op {
	case 0x00:
		return "TEST UNIT READY"
	case 0x03:
		return "REQUEST SENSE"
	case 0x08:
		return "READ(6)"
	case 0x0A:
		return "WRITE(6)"
	case 0x12:
		if b(1)&1 != 0 {
			return fmt.Sprintf("INQUIRY VPD page 0x%02X", b(2))
		}
		return "INQUIRY"
	case 0x1A:
		return mode("MODE SENSE(6)")
	case 0x5A:
		return mode("MODE SENSE(10)")
	case 0x1B:
		return fmt.Sprintf("START STOP UNIT (start %d, eject %d)", b(4)&1, b(4)>>1&1)
	case 0x1E:
		return fmt.Sprintf("PREVENT ALLOW MEDIUM REMOVAL (prevent %d)", b(4)&3)
	case 0x25:
		return "READ CAPACITY(10)"
	case 0x28:
		return rw("READ(10)")
	case 0x2A:
		return rw("WRITE(10)")
	case 0x88:
		return rw("READ(16)")
	case 0x8A:
		return rw("WRITE(16)")
	case 0x35:
		return "SYNCHRONIZE CACHE(10)"
	case 0x91:
		return "SYNCHRONIZE CACHE(16)"
	case 0x9E:
		if b(1)&0x1F == 0x10 {
			return "READ CAPACITY(16)"
		}
		return fmt.Sprintf("SERVICE ACTION IN(16) 0x%02X", b(1)&0x1F)
	case 0xA3:
		return fmt.Sprintf("MAINTENANCE IN 0x%02X", b(1)&0x1F)
	case 0xA0:
		return "REPORT LUNS"
	case 0x85, 0xA1:
		return fmt.Sprintf("ATA PASS-THROUGH (0x%02X)", op)
	default:
		return fmt.Sprintf("opcode 0x%02X", op)
	}
}

// commandTable is the side-by-side table of two traces of one device.
func commandTable(k, u *devTrace) string {
	kk, uk := k.byKey(), u.byKey()
	keys := map[string]byte{}
	for key, s := range kk {
		keys[key] = s.op
	}
	for key, s := range uk {
		keys[key] = s.op
	}
	order := make([]string, 0, len(keys))
	for key := range keys {
		order = append(order, key)
	}
	sort.Slice(order, func(i, j int) bool {
		if keys[order[i]] != keys[order[j]] {
			return keys[order[i]] < keys[order[j]]
		}
		return order[i] < order[j]
	})
	cell := func(s *cmdStats, f func(*cmdStats) string) string {
		if s == nil {
			return "-"
		}
		return f(s)
	}
	count := func(s *cmdStats) string {
		if s.failed > 0 {
			return fmt.Sprintf("%d (%d failed)", s.n, s.failed)
		}
		return strconv.Itoa(s.n)
	}
	maxLen := func(s *cmdStats) string { return strconv.FormatUint(uint64(s.maxLen), 10) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "| %-36s | %-15s | %-15s | %-12s | %-14s |\n", "command", "kernel count", "usbflash count", "kernel max B", "usbflash max B")
	fmt.Fprintf(&sb, "|%s|%s|%s|%s|%s|\n", strings.Repeat("-", 38), strings.Repeat("-", 17), strings.Repeat("-", 17), strings.Repeat("-", 14), strings.Repeat("-", 16))
	for _, key := range order {
		fmt.Fprintf(&sb, "| %-36s | %-15s | %-15s | %12s | %14s |\n", key,
			cell(kk[key], count), cell(uk[key], count), cell(kk[key], maxLen), cell(uk[key], maxLen))
	}
	return sb.String()
}

// controlTable counts the control requests each path sent the device.
func controlTable(k, u *devTrace) string {
	count := func(d *devTrace) map[string]int {
		out := map[string]int{}
		for _, c := range d.ctrl {
			out[c]++
		}
		return out
	}
	kc, uc := count(k), count(u)
	var order []string
	for c := range kc {
		order = append(order, c)
	}
	for c := range uc {
		if kc[c] == 0 {
			order = append(order, c)
		}
	}
	sort.Strings(order)
	var sb strings.Builder
	fmt.Fprintf(&sb, "| %-26s | %-20s | %-6s | %-8s |\n", "setup (type req val idx len)", "request", "kernel", "usbflash")
	for _, c := range order {
		fmt.Fprintf(&sb, "| %-26s | %-20s | %6d | %8d |\n", c, controlName(c), kc[c], uc[c])
	}
	return sb.String()
}

// requestOf is a control request's bmRequestType and bRequest.
func requestOf(setup string) string {
	f := strings.Fields(setup)
	if len(f) < 2 {
		return setup
	}
	return f[0] + " " + f[1]
}

// controlName names the requests a mass-storage host sends.
func controlName(setup string) string {
	switch requestOf(setup) {
	case "a1 fe":
		return "Get Max LUN"
	case "21 ff":
		return "Bulk-Only Reset"
	case "02 01":
		return "CLEAR_FEATURE(HALT)"
	case "00 09":
		return "SET_CONFIGURATION"
	case "01 0b":
		return "SET_INTERFACE"
	case "80 06":
		return "GET_DESCRIPTOR"
	case "80 00", "81 00", "82 00":
		return "GET_STATUS"
	}
	return "other"
}
