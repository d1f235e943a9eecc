//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestArm64 runs the arm64 build of usbflash (make cross's: static, usbfs;
// the guest is checked to hold no shared library at all) in an arm64 guest
// (qemu-system-aarch64 -M virt, Debian's arm64 kernel,
// busybox-static:arm64), against the same emulated
// readers as the amd64 suite, in one boot: .xz and .zst write + verify,
// multi-LUN by /LUN, a blkdebug write error naming the LBA range, and an
// unplug mid-write. It runs when -run names it (make e2e-arm64) or with
// USBFLASH_E2E_ARM64=1, so `make e2e` stays the amd64 suite.
func TestArm64(t *testing.T) {
	optIn(t, "Arm64", "USBFLASH_E2E_ARM64")
	e := setupArch(t, ArchARM64)
	needBinary(t, e)
	xzCard, zstCard := newCard(t, 16<<20), newCard(t, 16<<20)
	lun0, lun1 := newCard(t, 12<<20), newCard(t, 10<<20)
	bad, unplug := newCard(t, 16<<20), newCard(t, 48<<20)
	m := bootEnv(t, e, MachineSpec{Controller: XHCI, QMP: true, MemMB: 1024, Readers: []Reader{
		{Serial: "ARMXZ", LUNs: []LUN{{Backing: xzCard}}},
		{Serial: "ARMZST", LUNs: []LUN{{Backing: zstCard}}},
		{Serial: "ARMLUN", Bot: true, LUNs: []LUN{{Backing: lun0}, {Backing: lun1}}},
		writeFaultReader("ARMFAULT", bad),
		{ID: "armunplug", Serial: "ARMUNPLUG", LUNs: []LUN{{Backing: unplug}}},
	}})
	if r := guest(t, m, "uname -m"); strings.TrimSpace(r.Stdout) != "aarch64" {
		t.Fatalf("the guest is not arm64: uname -m says %q", r.Stdout)
	}
	t.Logf("arm64 guest ready in %v", m.Booted.Round(time.Millisecond))
	if len(e.Libs) == 0 {
		// The static usbfs build (make cross): the guest has no libusb,
		// nor any C library, and the binary needs none.
		r := guest(t, m, "find / -xdev -name 'lib*.so*' 2>/dev/null; ls /host/lib 2>/dev/null; true")
		if s := strings.TrimSpace(r.Stdout); s != "" {
			t.Fatalf("the guest has shared libraries, the static build must not need them:\n%s", s)
		}
		t.Logf("static binary, no shared library in the guest (no libusb)")
	}
	// On the virt board (never on the PC) the first TEST UNIT READY to
	// usb-bot's LUN 1 after boot fails with 5/25/00 (LUN not supported),
	// what QEMU's SCSI layer says when it finds no device at a LUN; the
	// next command sees the LUN (e2e/README.md). The first look is logged
	// here, and multi-LUN asserts on what follows.
	first := usbflash(t, m, time.Minute, "info", serialTarget("ARMLUN")+"/1")
	t.Logf("first look at ARMLUN/1 after boot: exit %d", first.Code)
	t.Run("xz", func(t *testing.T) { writeVerify(t, m, xzCard, "ARMXZ", 141, "xz") })
	t.Run("zst", func(t *testing.T) { writeVerify(t, m, zstCard, "ARMZST", 142, "zst") })
	t.Run("multi-LUN", func(t *testing.T) { multiLUN(t, m, "ARMLUN", lun0, lun1) })
	t.Run("write-error", func(t *testing.T) { writeFault(t, m, "ARMFAULT") })
	// Last: the other readers stay, but the bus has changed.
	t.Run("unplug", func(t *testing.T) { unplugMidWrite(t, m, "armunplug", "ARMUNPLUG", unplug, 40<<20) })
}
