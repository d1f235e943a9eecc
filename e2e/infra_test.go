//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestGuestBoots checks the infrastructure alone: the guest boots, sees the
// emulated reader on each controller, and the kernel path works when asked.
func TestGuestBoots(t *testing.T) {
	for _, c := range []Controller{XHCI, EHCI} {
		t.Run(string(c), func(t *testing.T) {
			card := newCard(t, 8<<20)
			m := bootAny(t, MachineSpec{Controller: c, Readers: []Reader{{Serial: "SMOKE1", LUNs: []LUN{{Backing: card}}}}})
			t.Logf("boot took %v", m.Booted)
			r := guest(t, m, "ls -R /dev/bus/usb; cat /sys/bus/usb/devices/*/serial; uname -r")
			if !strings.Contains(r.Stdout, "SMOKE1") {
				t.Fatalf("reader not visible:\n%s", r)
			}
			r = guest(t, m, "loadmod usb-storage sd_mod && for i in $(seq 50); do [ -b /dev/sda ] && break; usleep 100000; done; cat /sys/block/sda/size; ls -l /dev/sda")
			if !strings.Contains(r.Stdout, "16384") {
				t.Fatalf("kernel usb-storage did not see 8 MiB:\n%s", r)
			}
		})
	}
}

// TestQemuDevices checks the machine spec's device variants through the
// guest kernel alone: multi-LUN usb-bot, read-only, blkdebug fault and
// QMP medium removal.
func TestQemuDevices(t *testing.T) {
	a, b, ro, bad, rm := newCard(t, 4<<20), newCard(t, 6<<20), newCard(t, 4<<20), newCard(t, 4<<20), newCard(t, 4<<20)
	m := bootAny(t, MachineSpec{Controller: XHCI, QMP: true, Readers: []Reader{
		{Serial: "BOT", Bot: true, LUNs: []LUN{{Backing: a}, {Backing: b}}},
		{Serial: "RO", LUNs: []LUN{{Backing: ro, ReadOnly: true}}},
		{Serial: "BAD", LUNs: []LUN{{Backing: bad, Fault: &Fault{Sector: 100}}}},
		{ID: "rmv", Serial: "RMV", Bot: true, LUNs: []LUN{{Backing: rm, Removable: true}}},
	}})
	r := guest(t, m, `loadmod usb-storage sd_mod
for i in $(seq 100); do [ $(ls /sys/block | grep -c sd) -ge 5 ] && break; usleep 100000; done
for d in /sys/block/sd*; do echo "$(basename $d) $(cat $d/size) ro=$(cat $d/ro) rm=$(cat $d/removable) $(usbserial $d) $(basename $(readlink $d/device))"; done`)
	t.Log(r.Stdout)
	if strings.Count(r.Stdout, "\n") < 5 {
		t.Fatalf("want 5 disks:\n%s", r)
	}
	for _, want := range []string{"8192 ro=1", "12288 ro=0"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("no disk with %q", want)
		}
	}
	// The faulty disk: writing sector 100 fails.
	r, _ = m.Run(`dev=/dev/$(sdbyserial BAD)
echo dev=$dev; dd if=/dev/zero of=$dev bs=512 seek=96 count=8 conv=fsync; echo rc=$?; dmesg | tail -5`, time.Minute)
	t.Log(r)
	if !strings.Contains(r.Stdout, "I/O error") {
		t.Errorf("write over the blkdebug sector did not fail")
	}
	if _, err := m.QMP.Exec("blockdev-open-tray", map[string]any{"id": "rmv-l0", "force": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.QMP.Exec("blockdev-remove-medium", map[string]any{"id": "rmv-l0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.QMP.Exec("device_del", map[string]any{"id": "r1"}); err != nil {
		t.Fatal(err)
	}
}

// TestPrepare only prepares (or finds) the cached guest, probes the
// accelerator and builds the binary: `go test -tags e2e -run '^TestPrepare$'
// ./e2e/` warms the cache (guest/prepare.sh does that).
func TestPrepare(t *testing.T) {
	setupEnv(t)
	t.Logf("kernel %s\nvmlinux %s\ninitramfs %s\naccel %s\nusbflash %s (build error: %v)",
		env.Guest.Package, env.Guest.Vmlinux, env.Guest.Initramfs, env.Accel.Name, env.Usbflash, env.BuildErr)
}
