//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The fake card: nbdkit serves a disk that claims fakeClaimed bytes but
// stores only fakeReal (not a power of two); a read or write at byte o
// lands on o mod fakeReal. QEMU's usb-storage takes it as an nbd drive,
// so the real binary finds the fake over real libusb, and f3probe sees the
// same disk through the guest kernel's /dev/sdX.
const (
	fakeClaimed = 1 << 30
	fakeReal    = 300 << 20
	fakeReal2   = 256 << 20 // a power of two
	fakeReal3   = 200 << 20 // unreadable past it (mode=unreadable)
	genuineSize = 256 << 20
)

// checkResult is what the test reads of check's JSON summary.
type checkResult struct {
	UsableSize int64  `json:"usable_size"`
	Fake       bool   `json:"fake"`
	Kind       string `json:"kind"`
	Restored   bool   `json:"restored"`
}

// TestFakeCard: `usbflash check` finds the nbdkit fake (wrap at 300 MiB
// of a claimed 1 GiB) to the byte and exits 8, `write --check` refuses it
// for an image larger than what it holds, and a genuine card of the same
// boot is found genuine with its backing file unchanged. f3probe runs on
// the same two disks in the same boot through the guest kernel, and both
// tools' times and answers are logged side by side.
func TestFakeCard(t *testing.T) {
	nbdkit, err := exec.LookPath("nbdkit")
	if err != nil {
		skipOrFail(t, "nbdkit is not installed (apt-get install nbdkit nbdkit-plugin-python)")
	}
	backing, sock := startWrapDisk(t, nbdkit, fakeClaimed, fakeReal, "wrap")
	_, sock2 := startWrapDisk(t, nbdkit, fakeClaimed, fakeReal2, "wrap")
	backing3, sock3 := startWrapDisk(t, nbdkit, fakeClaimed, fakeReal3, "unreadable")
	genuine := newCard(t, genuineSize)

	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{
		{Serial: "FAKE1", LUNs: []LUN{{NBD: sock}}},
		{Serial: "GOOD1", LUNs: []LUN{{Backing: genuine}}},
		{Serial: "FAKE2", LUNs: []LUN{{NBD: sock2}}},
		{Serial: "FAKE3", LUNs: []LUN{{NBD: sock3}}},
	}})

	// usbflash check on the fake: exit 8, a wrap at exactly 300 MiB, and
	// the fake's flash as it was.
	sumBefore := fileSum(t, backing)
	r := usbflash(t, m, 20*time.Minute, "check", "--json", serialTarget("FAKE1"))
	wantCode(t, r, 8, "check of the fake")
	fake := checkSummaryOf(t, r)
	if fake.Kind != "wrap" || fake.UsableSize != fakeReal || !fake.Fake || !fake.Restored {
		t.Errorf("check of the fake: %+v, want a wrap at %d, restored", fake, fakeReal)
	}
	fakeTook := r.Took
	if fileSum(t, backing) != sumBefore {
		t.Error("check changed the fake card's flash")
	}
	// The same at a power of two (256 MiB), where f3probe's model holds.
	r = usbflash(t, m, 20*time.Minute, "check", "--json", serialTarget("FAKE2"))
	wantCode(t, r, 8, "check of the second fake")
	fake2 := checkSummaryOf(t, r)
	if fake2.Kind != "wrap" || fake2.UsableSize != fakeReal2 {
		t.Errorf("check of the second fake: %+v, want a wrap at %d", fake2, fakeReal2)
	}
	fake2Took := r.Took
	// A fake whose reads fail past 200 MiB (QEMU reports the disk's EIO
	// as ABORTED COMMAND 00/06): unreadable, to the byte.
	sum3 := fileSum(t, backing3)
	r = usbflash(t, m, 20*time.Minute, "check", "--json", serialTarget("FAKE3"))
	wantCode(t, r, 8, "check of the unreadable fake")
	fake3 := checkSummaryOf(t, r)
	if fake3.Kind != "unreadable" || fake3.UsableSize != fakeReal3 || !fake3.Restored {
		t.Errorf("check of the unreadable fake: %+v, want unreadable past %d, restored", fake3, fakeReal3)
	}
	if fileSum(t, backing3) != sum3 {
		t.Error("check changed the unreadable fake's flash")
	}
	fake3Took := r.Took

	// write --check refuses it for an image larger than what it holds.
	img := filepath.Join(m.Share, "img", "big.img")
	if err := os.WriteFile(img, makeImage(7, 320<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	r = usbflash(t, m, 20*time.Minute, "write", "--check", "--yes", "/host/img/big.img", serialTarget("FAKE1"))
	wantCode(t, r, 8, "write --check of the fake")
	if !strings.Contains(all(r), "nothing was written") || fileSum(t, backing) != sumBefore {
		t.Errorf("write --check of the fake must refuse it and leave it as it was:\n%s", all(r))
	}
	os.Remove(img)

	// The genuine card: genuine, and not one byte changed.
	r = usbflash(t, m, 20*time.Minute, "check", "--json", serialTarget("GOOD1"))
	wantCode(t, r, 0, "check of the genuine card")
	good := checkSummaryOf(t, r)
	if good.Kind != "genuine" || good.UsableSize != genuineSize || !good.Restored {
		t.Errorf("check of the genuine card: %+v", good)
	}
	checkUntouched(t, genuine)
	goodTook := r.Took
	// And as f3probe runs below (--destructive: nothing saved), for the
	// times side by side.
	r = usbflash(t, m, 20*time.Minute, "check", "--destructive", "--yes", "--json", serialTarget("GOOD1"))
	wantCode(t, r, 0, "check --destructive of the genuine card")
	t.Logf("COMPARE GOOD1: usbflash check --destructive %v", r.Took.Round(time.Millisecond))

	// f3probe, same disks, same boot, through the guest kernel.
	f3, err := exec.LookPath("f3probe")
	if err != nil {
		skipOrFail(t, "f3probe is not installed (apt-get install f3): usbflash's results stand, the comparison is missing")
		return
	}
	shipProbe(t, m, "f3probe", f3)
	guest(t, m, "loadmod usb-storage sd_mod")
	for _, c := range []struct {
		serial string
		took   time.Duration
		usable int64
	}{{"FAKE1", fakeTook, fake.UsableSize}, {"FAKE2", fake2Took, fake2.UsableSize}, {"FAKE3", fake3Took, fake3.UsableSize},
		{"GOOD1", goodTook, good.UsableSize}} {
		dev := strings.TrimSpace(guest(t, m, "sdbyserial "+c.serial).Stdout)
		fr, err := m.Run(fmt.Sprintf("LD_LIBRARY_PATH=/host/lib:/usr/local/lib timeout -s KILL 1200 /host/bin/f3probe --destructive --time-ops /dev/%s", dev), 21*time.Minute)
		if err != nil {
			t.Fatalf("f3probe: %v", err)
		}
		// f3probe 8.0 cannot save blocks in this guest: it stops at once
		// with "Out of memory", with 768 MiB or 2 GiB of RAM and with
		// --min-memory alike. So it runs --destructive, which does less
		// than usbflash check (which saves and restores): the comparison
		// favours f3probe.
		t.Logf("$ f3probe --destructive --time-ops /dev/%s\n%s", dev, fr)
		if fr.Code == 126 || fr.Code == 127 {
			t.Errorf("f3probe did not run in the guest (exit %d): the comparison is missing", fr.Code)
		}
		f3usable := f3Usable(fr.Stdout + fr.Stderr)
		t.Logf("COMPARE %s: usbflash check %v, usable %d bytes; f3probe %v (exit %d), usable %d bytes",
			c.serial, c.took.Round(time.Millisecond), c.usable, fr.Took.Round(time.Millisecond), fr.Code, f3usable)
	}
}

// startWrapDisk serves a disk claiming claimed bytes whose flash, a
// sparse file of real bytes, it returns with the server's socket; mode is
// wrapdisk.py's (wrap or unreadable).
func startWrapDisk(t *testing.T, nbdkit string, claimed, real int64, mode string) (backing, sock string) {
	t.Helper()
	dir := t.TempDir()
	backing = filepath.Join(dir, "flash.img")
	if err := os.WriteFile(backing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(backing, real); err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "fake.sock")
	plugin, _ := filepath.Abs("testdata/wrapdisk.py")
	srv := exec.Command(nbdkit, "--foreground", "--unix", sock, "python", plugin,
		"file="+backing, fmt.Sprintf("size=%d", claimed), fmt.Sprintf("real=%d", real), "mode="+mode)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatalf("nbdkit: %v", err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			return backing, sock
		}
		if i == 100 {
			skipOrFail(t, "nbdkit's python plugin did not start (apt-get install nbdkit-plugin-python)")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func checkSummaryOf(t *testing.T, r Result) checkResult {
	t.Helper()
	var s checkResult
	for _, line := range strings.Split(r.Stdout, "\n") {
		if strings.Contains(line, `"event":"summary"`) {
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	t.Fatalf("no summary event:\n%s", r)
	return s
}

// f3Usable reads the usable size from f3probe's report (-1: none).
func f3Usable(out string) int64 {
	m := regexp.MustCompile(`\*Usable\* size: .*\((\d+) blocks\)`).FindStringSubmatch(out)
	if m == nil {
		return -1
	}
	var n int64
	fmt.Sscan(m[1], &n)
	return n * 512
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}
