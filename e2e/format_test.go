//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/lib/parttable"
)

// formatAndErase (issue 46), in TestCustomize's boot: its three cards
// given back to normal use over USB. One is formatted FAT32 and one exFAT
// (--fs exfat: a 64 MiB card's own choice is FAT32), each then mounted by
// the guest kernel's vfat and exfat, a file written, the card mounted again
// and the file read back; the third is erased, unmapped first (QEMU's
// scsi-hd offers UNMAP), every byte of its backing file zero. On the host the formatted cards' partitions pass fsck.fat -n
// and fsck.exfat -n after the guest wrote to them, with the labels given.
func formatAndErase(t *testing.T, m *Machine, serials, cards []string) {
	t.Helper()
	r := usbflash(t, m, 3*time.Minute, "format", "--yes", "--label", "E2EFAT", serialTarget(serials[0]))
	wantCode(t, r, 0, "format")
	wantText(t, r, "format", `FAT32, labelled "E2EFAT"`)
	r = usbflash(t, m, 3*time.Minute, "format", "--yes", "--fs", "exfat", "--label", "E2E exFAT", serialTarget(serials[1]))
	wantCode(t, r, 0, "format --fs exfat")
	wantText(t, r, "format --fs exfat", `exFAT, labelled "E2E exFAT", 128 KiB clusters`)
	r = usbflash(t, m, 5*time.Minute, "erase", "--yes", serialTarget(serials[2]))
	wantCode(t, r, 0, "erase")
	// QEMU's scsi-hd offers UNMAP (VPD 0xB2), through usb-storage too.
	wantText(t, r, "erase", "every block unmapped (UNMAP, 67.1 MB)")

	var script strings.Builder
	script.WriteString("loadmod usb-storage sd_mod vfat exfat nls_cp437 nls_ascii nls_utf8 >/dev/null 2>&1 || exit 1\n")
	for i, fs := range []string{"vfat", "exfat"} {
		s := serials[i]
		fmt.Fprintf(&script, "d=$(sdbyserial %s) || exit 1\nfor i in $(seq 100); do [ -b /dev/${d}1 ] && break; usleep 100000; done\n", s)
		fmt.Fprintf(&script, "mkdir -p /mnt/%[1]s && mount -t %[2]s /dev/${d}1 /mnt/%[1]s || exit 1\n", s, fs)
		fmt.Fprintf(&script, "echo 'written by the guest on %[2]s' > /mnt/%[1]s/hello.txt && mkdir /mnt/%[1]s/DCIM && sync && umount /mnt/%[1]s || exit 1\n", s, fs)
		fmt.Fprintf(&script, "mount -t %[2]s -o ro /dev/${d}1 /mnt/%[1]s || exit 1\necho \"@@%[1]s $(cat /mnt/%[1]s/hello.txt)\"\nls -d /mnt/%[1]s/DCIM || exit 1\numount /mnt/%[1]s\n", s, fs)
	}
	script.WriteString("dmesg | grep -i -E 'fat-fs|exfat' || true\n")
	g := guest(t, m, script.String())
	t.Logf("mounted:\n%s", g.Stdout)
	for i, fs := range []string{"vfat", "exfat"} {
		if want := fmt.Sprintf("@@%s written by the guest on %s", serials[i], fs); !strings.Contains(g.Stdout, want) {
			t.Errorf("the guest did not read back %q:\n%s", want, g.Stdout)
		}
	}
	if low := strings.ToLower(g.Stdout); strings.Contains(low, "error") || strings.Contains(low, "corrupt") {
		t.Errorf("the guest kernel complained:\n%s", g.Stdout)
	}

	checkPartition(t, cards[0], "fsck.fat", "E2EFAT")
	checkPartition(t, cards[1], "fsck.exfat", "label: E2E exFAT")
	b, err := os.ReadFile(cards[2])
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte{0}); n != len(b) {
		t.Errorf("the erased card holds %d bytes that are not zero", len(b)-n)
	}
}

// checkPartition runs tool -n -v over the card's first partition on the
// host and wants label in what it says (or, for FAT, in the boot sector).
func checkPartition(t *testing.T, backing, tool, label string) {
	t.Helper()
	f, err := os.Open(backing)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	read := func(off int64, p []byte) error { _, err := f.ReadAt(p, off); return err }
	p, err := parttable.First(read, 512, st.Size())
	if err != nil {
		t.Fatalf("%s: the partition table: %v", backing, err)
	}
	part := filepath.Join(t.TempDir(), "part.img")
	out, err := os.Create(part)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, io.NewSectionReader(f, p.Start, p.Size)); err != nil {
		t.Fatal(err)
	}
	out.Close()
	path := tool
	if _, err := exec.LookPath(tool); err != nil {
		path = "/usr/sbin/" + tool
	}
	said, err := exec.Command(path, "-n", "-v", part).CombinedOutput()
	if err != nil {
		t.Errorf("%s -n on %s: %v\n%s", tool, backing, err, said)
	}
	boot := make([]byte, 512)
	io.ReadFull(io.NewSectionReader(f, p.Start, 512), boot)
	if !strings.Contains(string(said), label) && !bytes.Contains(boot, []byte(label)) {
		t.Errorf("%s: no label %q:\n%s", backing, label, said)
	}
}
