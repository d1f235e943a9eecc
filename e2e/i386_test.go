//go:build e2e

package e2e

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestI386 runs the i386 build (make cross's and make dist's: static,
// usbfs, GOARCH=386) on its own architecture: as a 32-bit x86 process on
// the amd64 guest's kernel, which runs i386 programs natively (IA32
// emulation) where Debian's qemu-i386 user emulator crashes any Go 386
// program. usbfs's URBs and ioctls go through the kernel's 32-bit compat
// layer, so their 32-bit layout is what is tested: list, write and verify
// a card. USBFLASH_E2E_BIN_I386 names a binary instead of building one.
func TestI386(t *testing.T) {
	needCLI(t)
	bin := os.Getenv("USBFLASH_E2E_BIN_I386")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "usbflash-i386")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/usbflash")
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=386", "GO386=sse2")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build for 386: %v\n%s", err, out)
		}
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	class, machine, dynamic := f.Class, f.Machine, f.Section(".interp") != nil
	f.Close()
	if class != elf.ELFCLASS32 || machine != elf.EM_386 || dynamic {
		t.Fatalf("%s is %v %v, want a static 32-bit i386 program", bin, class, machine)
	}
	card := newCard(t, 16<<20)
	const serial = "E2EI386"
	target := serialTarget(serial)
	m := boot(t, MachineSpec{Controller: XHCI, Readers: []Reader{{Serial: serial, LUNs: []LUN{{Backing: card}}}}})
	if err := linkOrCopy(bin, filepath.Join(m.Share, "usbflash-i386")); err != nil {
		t.Fatal(err)
	}
	img := makeImage(38, 5<<20+512)
	p := putImage(t, m, "i386.img", img, "raw")
	r := guest(t, m, "uname -m && cp /host/usbflash-i386 /tmp/u386 && /tmp/u386 version")
	if !strings.HasPrefix(r.Stdout, "x86_64\n") || !strings.Contains(r.Stdout, "usbflash ") {
		t.Fatalf("the guest or the i386 binary:\n%s", r)
	}
	run := func(args ...string) Result {
		t.Helper()
		r, err := m.Run("timeout -s TERM 100 /tmp/u386 "+sh(args...), 2*time.Minute)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, r)
		}
		t.Logf("$ usbflash(i386) %s\n%s", strings.Join(args, " "), r)
		return r
	}
	r = run("list")
	wantCode(t, r, 0, "i386 list")
	if !strings.Contains(r.Stdout, target) || !strings.Contains(r.Stdout, "QEMU HARDDISK") {
		t.Errorf("i386 list does not show the card:\n%s", r)
	}
	r = run("write", p, target, "--yes")
	wantCode(t, r, 0, "i386 write and verify")
	checkCard(t, card, img)
	r = run("verify", p, target)
	wantCode(t, r, 0, "i386 verify")
}
