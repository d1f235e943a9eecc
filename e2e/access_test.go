//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/dist"
)

// TestNonRootAccess: usbflash run as a user without root in the guest.
// Without access to the reader's usbfs node, list still lists it, marked,
// and says once what would give access; write exits 5 with that advice
// before anything else (its image does not even exist). With the
// package's rule installed (its default gives the readers to the group
// usbflash), the advice names the group. The guest has no udevd, so the
// rule's effect is applied by hand
// as udev would (chgrp usbflash, chmod 0660 on the node); the user, in
// that group, then lists, writes and verifies the card.
func TestNonRootAccess(t *testing.T) {
	card := newCard(t, 16<<20)
	const serial = "E2EUSER1"
	target := serialTarget(serial)
	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{{Serial: serial, LUNs: []LUN{{Backing: card}}}}})
	img := makeImage(35, 3<<20+512)
	p := putImage(t, m, "user.img", img, "raw")
	rule, err := os.ReadFile(filepath.Join(moduleRoot(), "internal", "dist", "70-usbflash.rules"))
	if err != nil {
		t.Fatal(err)
	}
	// The package's rule as it is: the readers go to the group usbflash.
	if !strings.Contains(string(rule), "\nACTION!=\"remove\", SUBSYSTEM==\"usb\"") || !strings.Contains(string(rule), `GROUP="usbflash"`) {
		t.Fatal("the rule gives the readers to no group by default")
	}
	if err := os.WriteFile(filepath.Join(m.Share, "70-usbflash.rules"), rule, 0o644); err != nil {
		t.Fatal(err)
	}
	guest(t, m, `echo 'flash:x:1000:1000::/tmp:/bin/sh' >>/etc/passwd && echo 'root:x:0:' >>/etc/group &&
echo 'flash:x:1000:' >>/etc/group && echo 'usbflash:x:1001:flash' >>/etc/group &&
cp `+p+` /tmp/user.img && chmod 644 /tmp/user.img && su flash -c id`)
	node := strings.TrimSpace(guest(t, m, `for d in /sys/bus/usb/devices/*; do
  [ "$(cat $d/serial 2>/dev/null)" = `+serial+` ] && printf '/dev/bus/usb/%03d/%03d\n' $(cat $d/busnum) $(cat $d/devnum); done; true`).Stdout)
	if !strings.HasPrefix(node, "/dev/bus/usb/") {
		t.Fatalf("no device node for %s: %q", serial, node)
	}
	asUser := func(args ...string) Result {
		t.Helper()
		cmd := "timeout -s TERM 100 usbflash " + sh(args...)
		r, err := m.Run("su flash -c "+sh(cmd), 2*time.Minute)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, r)
		}
		t.Logf("$ (flash) usbflash %s\n%s", strings.Join(args, " "), r)
		return r
	}

	// No rule: the reader is listed, marked; the advice is said once.
	guest(t, m, "ls -l "+node)
	r := asUser("list")
	wantCode(t, r, 0, "list without access")
	if !strings.Contains(r.Stdout, target) || !strings.Contains(r.Stdout, "no permission") {
		t.Errorf("list does not show the reader it cannot open, marked:\n%s", r)
	}
	if n := strings.Count(all(r), "install usbflash's package"); n != 1 {
		t.Errorf("the advice is said %d times, want once:\n%s", n, r)
	}
	if strings.Contains(strings.ToLower(all(r)), "permission denied") {
		t.Errorf("a bare EACCES:\n%s", r)
	}
	r = asUser("list", "--json")
	wantCode(t, r, 0, "list --json without access")
	if !strings.Contains(r.Stdout, `"no_permission":true`) || !strings.Contains(r.Stdout, `"note":"No permission to open 1 reader`) {
		t.Errorf("list --json:\n%s", r)
	}
	// write: the access, before the image (which does not exist).
	r = asUser("write", "/tmp/absent.img", target, "--yes")
	wantCode(t, r, 5, "write without access")
	wantText(t, r, "write without access", "no permission to open "+node)
	wantText(t, r, "write without access", "install usbflash's package")
	if strings.Contains(all(r), "absent.img") {
		t.Errorf("write looked at the image before the reader's access:\n%s", r)
	}

	// The rule installed, not yet applied: it names the group to join.
	guest(t, m, "mkdir -p /etc/udev/rules.d && cp /host/70-usbflash.rules /etc/udev/rules.d/")
	r = asUser("write", "/tmp/user.img", target, "--yes")
	wantCode(t, r, 5, "write with the rule not applied")
	wantText(t, r, "write with the rule not applied", "/etc/udev/rules.d/70-usbflash.rules opens readers to the group usbflash: an administrator adds you to it")

	// What udevd would do with the rule, by hand: the user, in
	// the group, lists, writes and verifies the card.
	guest(t, m, fmt.Sprintf("chgrp usbflash %s && chmod 0660 %s && ls -l %s", node, node, node))
	r = asUser("list")
	wantCode(t, r, 0, "list with access")
	if strings.Contains(all(r), "no permission") || !strings.Contains(r.Stdout, target) {
		t.Errorf("list with access:\n%s", r)
	}
	r = asUser("write", "/tmp/user.img", target, "--yes")
	wantCode(t, r, 0, "write and verify with access")
	checkCard(t, card, img)
}

// TestDebWithUdevd: the amd64 .deb that make dist builds, installed by
// dpkg (busybox's) into a guest that runs Debian's own udevd (the udev
// package's udevadm as systemd-udevd, with its 50-udev-default.rules, the
// libraries it links taken from Debian's packages): the package's
// postinst reloads udevd, the package's rule gives the reader's node to
// the group usbflash, 0660, and does not tag it uaccess; the user in the
// group lists, writes and verifies the card with the packaged binary. The
// seat's variant, as an administrator enables it (usage.md), tags the
// reader uaccess (the guest has no logind, so no seat turns the tag into
// an ACL: the seat's user is not tested here); with the group rule
// commented out too, a user at no seat is advised that the rule serves the
// seat only.
// USBFLASH_E2E_DEB names a .deb to use instead of building one.
func TestDebWithUdevd(t *testing.T) {
	card := newCard(t, 16<<20)
	const serial = "E2EUDEV1"
	target := serialTarget(serial)
	deb := os.Getenv("USBFLASH_E2E_DEB")
	if deb == "" {
		out := t.TempDir()
		names, err := dist.Build(context.Background(), dist.Options{Repo: moduleRoot(), Out: out,
			Platforms: []dist.Platform{dist.Platforms()[0]}, Log: testWriter{t}})
		if err != nil {
			t.Fatalf("make dist: %v", err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, "_amd64.deb") {
				deb = filepath.Join(out, n)
			}
		}
	}
	logf := func(f string, a ...any) { t.Logf(f, a...) }
	udev, err := DebFiles(ArchAMD64, "udev", logf)
	if err != nil {
		skipOrFail(t, "Debian's udev: %v", err)
	}
	shared, err := DebFiles(ArchAMD64, "libsystemd-shared", logf)
	if err != nil {
		skipOrFail(t, "Debian's libsystemd-shared: %v", err)
	}
	m := boot(t, MachineSpec{Controller: XHCI, QMP: true, Readers: []Reader{{Serial: serial, LUNs: []LUN{{Backing: card}}}}})
	udevadm := filepath.Join(udev, "bin", "udevadm")
	libs, err := LibClosure(ArchAMD64, udevadm, filepath.Join(shared, "usr", "lib", ArchAMD64.Triplet, "systemd"))
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range libs {
		if err := linkOrCopy(l, filepath.Join(m.Share, "lib", name)); err != nil && !fileExists(filepath.Join(m.Share, "lib", name)) {
			t.Fatal(err)
		}
	}
	for src, dst := range map[string]string{udevadm: "udevadm", deb: "usbflash.deb",
		filepath.Join(udev, "lib", "udev", "rules.d", "50-udev-default.rules"): "50-udev-default.rules"} {
		if err := linkOrCopy(src, filepath.Join(m.Share, dst)); err != nil {
			t.Fatal(err)
		}
	}
	installLoader(t, m, udevadm)
	img := makeImage(36, 3<<20+512)
	p := putImage(t, m, "deb.img", img, "raw")
	guest(t, m, `mkdir -p /usr/lib/udev/rules.d /etc/udev/rules.d /run/udev /var/lib/dpkg/info /var/lib/dpkg/updates &&
touch /var/lib/dpkg/status && cp /host/udevadm /usr/bin/udevadm && ln -s /usr/bin/udevadm /usr/bin/systemd-udevd &&
cp /host/50-udev-default.rules /usr/lib/udev/rules.d/ && systemd-udevd --daemon && udevadm --version &&
echo 'flash:x:1000:1000::/tmp:/bin/sh' >>/etc/passwd && echo 'root:x:0:' >>/etc/group &&
echo 'flash:x:1000:' >>/etc/group && echo 'usbflash:x:1001:flash' >>/etc/group &&
cp `+p+` /tmp/deb.img && chmod 644 /tmp/deb.img`)
	r := guest(t, m, "dpkg -i /host/usbflash.deb && ls -l /usr/bin/usbflash /usr/lib/udev/rules.d/70-usbflash.rules && udevadm settle")
	t.Logf("dpkg -i:\n%s", r)
	node := strings.TrimSpace(guest(t, m, `for d in /sys/bus/usb/devices/*; do
  [ "$(cat $d/serial 2>/dev/null)" = `+serial+` ] && printf '/dev/bus/usb/%03d/%03d\n' $(cat $d/busnum) $(cat $d/devnum); done; true`).Stdout)
	if !strings.HasPrefix(node, "/dev/bus/usb/") {
		t.Fatalf("no device node for %s: %q", serial, node)
	}
	// The postinst's reload and trigger ran the package's rule: the
	// reader's node is the group's, and no seat is given it.
	r = guest(t, m, "udevadm info "+node+" && ls -l "+node)
	if !strings.Contains(r.Stdout, ":080650:") || strings.Contains(r.Stdout, "uaccess") {
		t.Errorf("udevd tagged the reader uaccess, or did not see its interface:\n%s", r)
	}
	if !strings.Contains(r.Stdout, "crw-rw---- ") || !strings.Contains(r.Stdout, " usbflash ") {
		t.Errorf("udevd did not give the node to the group usbflash, 0660:\n%s", r)
	}
	asUser := func(args ...string) Result {
		t.Helper()
		cmd := "timeout -s TERM 100 /usr/bin/usbflash " + sh(args...)
		r, err := m.Run("su flash -c "+sh(cmd), 2*time.Minute)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, r)
		}
		t.Logf("$ (flash) usbflash %s\n%s", strings.Join(args, " "), r)
		return r
	}
	r = asUser("list")
	wantCode(t, r, 0, "list in the group")
	if strings.Contains(all(r), "no permission") || !strings.Contains(r.Stdout, target) {
		t.Errorf("list in the group:\n%s", r)
	}
	r = asUser("write", "/tmp/deb.img", target, "--yes")
	wantCode(t, r, 0, "write and verify in the group")
	checkCard(t, card, img)
	// What the packaged bash, zsh and fish completions ask the binary:
	// the live targets.
	r = asUser("__complete", "write", "/tmp/deb.img", "")
	wantCode(t, r, 0, "completing write's target")
	if !strings.Contains(r.Stdout, target+"\t") || !strings.Contains(r.Stdout, "sim:") {
		t.Errorf("completion does not offer the reader:\n%s", r)
	}

	// The seat's variant, as usage.md says to enable it: tagged uaccess.
	r = guest(t, m, `cp /usr/lib/udev/rules.d/70-usbflash.rules /etc/udev/rules.d/ && sed -i 's/^# ACTION/ACTION/' /etc/udev/rules.d/70-usbflash.rules &&
udevadm control --reload && udevadm trigger --subsystem-match=usb && udevadm settle && udevadm info `+node)
	if !strings.Contains(r.Stdout, "uaccess") {
		t.Errorf("the seat's variant did not tag the reader uaccess:\n%s", r)
	}
	// The seat's alone: a user at no seat is told so. The reader is
	// plugged in again once the group's rule is gone: udevd gives a node
	// the group a rule names on a change event, but never takes it back.
	guest(t, m, `sed -i '/GROUP=/s/^/# /' /etc/udev/rules.d/70-usbflash.rules && udevadm control --reload`)
	if _, err := m.QMP.Exec("device_del", map[string]any{"id": "r0"}); err != nil {
		t.Fatal(err)
	}
	guest(t, m, `i=0; while [ -e `+node+` ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; [ ! -e `+node+` ]`)
	// A card of its own: the first may still be open in QEMU's block layer.
	if _, err := m.QMP.Exec("blockdev-add", map[string]any{"driver": "raw", "node-name": "r0-again",
		"file": map[string]any{"driver": "file", "filename": newCard(t, 16<<20)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.QMP.Exec("device_add", map[string]any{"driver": "usb-storage", "id": "r0-again", "bus": "xhci.0",
		"drive": "r0-again", "serial": serial}); err != nil {
		t.Fatal(err)
	}
	r = guest(t, m, `udevadm settle; i=0; while [ $i -lt 100 ]; do for d in /sys/bus/usb/devices/*; do
  [ "$(cat $d/serial 2>/dev/null)" = `+serial+` ] && n=$(printf '/dev/bus/usb/%03d/%03d' $(cat $d/busnum) $(cat $d/devnum)) && [ -e $n ] && udevadm settle && ls -l $n && exit 0; done; sleep 0.1; i=$((i+1)); done; exit 1`)
	if strings.Contains(r.Stdout, " usbflash ") {
		t.Errorf("the reader plugged in again is still the group's:\n%s", r)
	}
	r = asUser("write", "/tmp/deb.img", target, "--yes")
	wantCode(t, r, 5, "write with the seat's rule alone, no seat")
	wantText(t, r, "write with the seat's rule alone, no seat", "/etc/udev/rules.d/70-usbflash.rules opens readers to the user at the seat (a local login) only")
}

// testWriter logs what is written to it, line by line.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
