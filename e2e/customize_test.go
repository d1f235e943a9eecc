//go:build e2e

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/testkit/osimage"
)

// The boot partition of the e2e images: 40 MiB of FAT32 at 4 MiB, as
// Raspberry Pi OS puts its own.
const (
	custBootStart = 4 << 20
	custBootSize  = 40 << 20
)

// bootFilesInGuest mounts the first partition of the kernel's disk of
// each reader with the guest kernel's vfat, read-only, and returns the
// named files as it reads them (a sha256sum for binary ones).
func bootFilesInGuest(t *testing.T, m *Machine, serials []string, names ...string) map[string]map[string]string {
	t.Helper()
	var script strings.Builder
	script.WriteString("loadmod usb-storage sd_mod vfat nls_cp437 nls_ascii nls_utf8 >/dev/null 2>&1\n")
	for _, s := range serials {
		fmt.Fprintf(&script, "d=$(sdbyserial %s) || exit 1\nfor i in $(seq 100); do [ -b /dev/${d}1 ] && break; usleep 100000; done\n", s)
		fmt.Fprintf(&script, "mkdir -p /mnt/%s && mount -t vfat -o ro /dev/${d}1 /mnt/%s || exit 1\n", s, s)
		for _, n := range names {
			if strings.HasSuffix(n, ".bin") {
				fmt.Fprintf(&script, "echo '@@%s %s'; sha256sum < %s | cut -d' ' -f1\n", s, n, sh("/mnt/"+s+"/"+n))
			} else {
				fmt.Fprintf(&script, "echo '@@%s %s'; cat %s; echo\n", s, n, sh("/mnt/"+s+"/"+n)) // a file may lack its last newline
			}
		}
		fmt.Fprintf(&script, "umount /mnt/%s\n", s)
	}
	script.WriteString("dmesg | grep -i 'FAT-fs' || true\n")
	r := guest(t, m, script.String())
	if strings.Contains(strings.ToLower(r.Stdout), "fat-fs") && strings.Contains(strings.ToLower(r.Stdout), "error") {
		t.Errorf("the guest kernel's vfat complained:\n%s", r.Stdout)
	}
	got := map[string]map[string]string{}
	var card, file string
	for _, l := range strings.SplitAfter(r.Stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "@@"); ok {
			f := strings.SplitN(strings.TrimSpace(rest), " ", 2)
			card, file = f[0], f[1]
			if got[card] == nil {
				got[card] = map[string]string{}
			}
			continue
		}
		if card != "" {
			got[card][file] += l
		}
	}
	for _, files := range got {
		for n, text := range files {
			files[n] = strings.TrimSuffix(text, "\n") // the echo after each file
		}
	}
	return got
}

// fsckCard runs fsck.fat -n over a card's boot partition on the host.
func fsckCard(t *testing.T, backing string) {
	t.Helper()
	b, err := os.ReadFile(backing)
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(t.TempDir(), "boot.part")
	if err := os.WriteFile(part, b[custBootStart:custBootStart+custBootSize], 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("fsck.fat", "-n", part).CombinedOutput(); err != nil {
		t.Errorf("fsck.fat on %s: %v\n%s", backing, err, out)
	}
}

// TestCustomize, one boot: cards written and customised over USB (no FAT
// driver used for it) are then mounted by the guest kernel's vfat and every
// file reads back as asked: two cards of one run with their own hostnames
// (systemd format, an extra file with a long name), then a --watch run
// that gives three cards three hostnames (cloud-init, decided from the
// image), then a card written plainly and customised in place twice with
// usbflash customize. Each card's boot partition passes fsck.fat on the
// host.
func TestCustomize(t *testing.T) {
	const size = 64 << 20
	serials := []string{"CUST1", "CUST2", "CUST3"}
	var readers []Reader
	var cards []string
	for _, s := range serials {
		c := newCard(t, size)
		cards = append(cards, c)
		readers = append(readers, Reader{Serial: s, LUNs: []LUN{{Backing: c}}})
	}
	m := boot(t, MachineSpec{Controller: XHCI, MemMB: 1024, Readers: readers})

	raspios, err := osimage.Bootable(t.TempDir(), custBootStart, custBootSize, 3<<20, osimage.RaspiosBoot, 41)
	if err != nil {
		t.Fatal(err)
	}
	trixieBoot := map[string]string{"user-data": "#cloud-config\n", "meta-data": "instance-id: rpios\n"}
	for k, v := range osimage.RaspiosBoot {
		trixieBoot[k] = v
	}
	trixie, err := osimage.Bootable(t.TempDir(), custBootStart, custBootSize, 3<<20, trixieBoot, 42)
	if err != nil {
		t.Fatal(err)
	}
	p1 := putImage(t, m, "raspios.img", raspios, "xz")
	p2 := putImage(t, m, "trixie.img", trixie, "raw")
	payload := bytes.Repeat([]byte("usbflash e2e payload "), 10000)
	sum := sha256.Sum256(payload)
	for name, data := range map[string][]byte{
		"payload.bin": payload,
		"c.toml": []byte("user = \"maker\"\npassword = \"e2e-secret\"\nssh = true\nconfig_txt = [\"dtparam=i2c_arm=on\"]\n" +
			"[wifi]\nssid = \"E2E Net\"\npassword = \"e2e passphrase\"\ncountry = \"GB\"\n[files]\n\"overlays/a long payload name.bin\" = \"payload.bin\"\n"),
	} {
		if err := os.WriteFile(filepath.Join(m.Share, "img", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Two cards of one run, their own {n}.
	r := usbflash(t, m, 5*time.Minute, "write", p1, serialTarget("CUST1"), serialTarget("CUST2"), "--yes",
		"--customize", "/host/img/c.toml", "--hostname", "station-{n}")
	wantCode(t, r, 0, "a customised write of two cards")
	wantText(t, r, "a customised write of two cards", "Customising as systemd")
	got := bootFilesInGuest(t, m, serials[:2], "cmdline.txt", "config.txt", "firstrun.sh", "overlays/a long payload name.bin")
	for i, s := range serials[:2] {
		f := got[s]
		if want := fmt.Sprintf("NEW_HOSTNAME='station-%d'\n", i+1); !strings.Contains(f["firstrun.sh"], want) {
			t.Errorf("%s: firstrun.sh lacks %q:\n%s", s, want, f["firstrun.sh"])
		}
		if !strings.HasSuffix(f["cmdline.txt"], " systemd.run=/boot/firstrun.sh systemd.run_success_action=reboot systemd.unit=kernel-command-line.target") {
			t.Errorf("%s: cmdline.txt = %q", s, f["cmdline.txt"])
		}
		if !strings.Contains(f["config.txt"], "\ndtparam=i2c_arm=on\n") || strings.Contains(f["config.txt"], "#dtparam=i2c_arm=on") {
			t.Errorf("%s: config.txt = %q", s, f["config.txt"])
		}
		if strings.TrimSpace(f["overlays/a long payload name.bin"]) != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: the extra file reads back as %q", s, f["overlays/a long payload name.bin"])
		}
		if strings.Contains(f["firstrun.sh"], "e2e-secret") || strings.Contains(f["firstrun.sh"], "e2e passphrase") {
			t.Errorf("%s: a secret is in firstrun.sh in clear", s)
		}
		fsckCard(t, cards[i])
	}

	// --watch: every card present, each its own hostname; the format
	// decided from the image (a cloud-init seed on Raspberry Pi OS).
	report := filepath.Join(m.Share, "cust-watch.json")
	w := m.Start(`usbflash write ` + p2 + ` --watch --yes --hostname 'w-{n}' --report /host/cust-watch.json >/tmp/cw.out 2>&1 & pid=$!
while [ ! -e /host/cust-stop ] && kill -0 $pid 2>/dev/null; do usleep 50000; done
kill -INT $pid; wait $pid; rc=$?; cat /tmp/cw.out; exit $rc`)
	waitReport(t, report, 3, w, 5*time.Minute)
	os.WriteFile(filepath.Join(m.Share, "cust-stop"), nil, 0o644)
	r, err = w.Wait(2 * time.Minute)
	if err != nil {
		t.Fatalf("watch: %v\n%s", err, r)
	}
	t.Logf("watch:\n%s", r)
	wantCode(t, r, 0, "a customised --watch of three cards")
	wantText(t, r, "a customised --watch of three cards", "Customising as cloudinit-rpi")
	got = bootFilesInGuest(t, m, serials, "user-data", "meta-data", "cmdline.txt")
	var hosts, ids []string
	idRE := regexp.MustCompile(`ds=nocloud;i=(\S+)$`)
	for i, s := range serials {
		f := got[s]
		h := regexp.MustCompile(`(?m)^hostname: (\S+)$`).FindStringSubmatch(f["user-data"])
		id := idRE.FindStringSubmatch(strings.TrimSpace(f["cmdline.txt"]))
		if h == nil || id == nil || strings.TrimSpace(f["meta-data"]) != "instance-id: "+id[1] || !strings.HasPrefix(f["user-data"], "#cloud-config\n") {
			t.Errorf("%s: user-data %q, meta-data %q, cmdline.txt %q", s, f["user-data"], f["meta-data"], f["cmdline.txt"])
			continue
		}
		hosts, ids = append(hosts, h[1]), append(ids, id[1])
		fsckCard(t, cards[i])
	}
	slices.Sort(hosts)
	if strings.Join(hosts, " ") != "w-1 w-2 w-3" {
		t.Errorf("the watched cards' hostnames are %v, want w-1 w-2 w-3", hosts)
	}
	if slices.Sort(ids); len(slices.Compact(ids)) != 3 {
		t.Errorf("the watched cards share an instance-id: %v", ids)
	}

	// A card written without a customisation, then customised in place
	// over USB, twice (cmdline.txt carries one entry): usbflash customize.
	r = usbflash(t, m, 5*time.Minute, "write", p1, serialTarget("CUST3"), "--yes")
	wantCode(t, r, 0, "a plain write")
	for _, host := range []string{"late-{n}", "later-{n}"} {
		r = usbflash(t, m, 2*time.Minute, "customize", "--yes", serialTarget("CUST3"), "--hostname", host, "--user", "maker")
		wantCode(t, r, 0, "usbflash customize")
		wantText(t, r, "usbflash customize", "customised (systemd, FAT32): firstrun.sh, cmdline.txt; read back the same")
	}
	f := bootFilesInGuest(t, m, serials[2:], "firstrun.sh", "cmdline.txt")["CUST3"]
	if !strings.Contains(f["firstrun.sh"], "NEW_HOSTNAME='later-1'\n") {
		t.Errorf("customised in place: firstrun.sh lacks later-1:\n%s", f["firstrun.sh"])
	}
	if strings.Count(f["cmdline.txt"], "systemd.run=") != 1 || strings.Contains(f["cmdline.txt"], "ds=nocloud") {
		t.Errorf("customised in place twice: cmdline.txt = %q", f["cmdline.txt"])
	}
	fsckCard(t, cards[2])

	// The cards given back to normal use (format_test.go): same boot.
	formatAndErase(t, m, serials, cards)
}
