//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestArm64Bench and TestAmd64Bench measure, in one boot of their guest on
// the same emulated reader: usbflash against the guest kernel's
// `dd bs=1M oflag=direct`, and usbflash's xz, zstd and gzip decoding
// (to a file: target on tmpfs) against the C tools of the same Debian
// architecture. MB/s is image bytes / guest wall time; CPU s/GiB is the
// command's user+system time (the shell's cutime+cstime around it, from
// /proc/self/stat) per GiB of image. The kernel's own USB work under dd
// runs in kernel threads and is not in dd's CPU time. Under TCG the
// numbers say how the two compare on one emulated CPU, not how fast real
// hardware is; the amd64 run gives the ratios to compare with.
func TestArm64Bench(t *testing.T) {
	optIn(t, "Arm64Bench", "USBFLASH_E2E_BENCH")
	archBench(t, ArchARM64)
}

func TestAmd64Bench(t *testing.T) {
	optIn(t, "Amd64Bench", "USBFLASH_E2E_BENCH")
	archBench(t, ArchAMD64)
}

// benchTools puts xz, zstd and gzip of the guest's architecture, with the
// libraries they need, into the machine's share (/host/tools, /host/lib).
func benchTools(t *testing.T, e *Env, m *Machine) {
	t.Helper()
	arch := e.Guest.Arch
	logf := func(f string, a ...any) { t.Logf(f, a...) }
	tools := map[string]string{"xz": "/usr/bin/xz", "zstd": "/usr/bin/zstd", "gzip": "/bin/gzip"}
	var extra []string
	if !arch.native() {
		for tool, pkg := range map[string]string{"xz": "xz-utils", "zstd": "zstd", "gzip": "gzip"} {
			dir, err := DebFiles(arch, pkg, logf)
			if err != nil {
				t.Fatal(err)
			}
			for _, sub := range []string{"usr/bin", "bin"} {
				if p := filepath.Join(dir, sub, tool); fileExists(p) {
					tools[tool] = p
				}
			}
		}
		for _, pkg := range []string{"liblzma5", "libzstd1", "liblz4-1", "zlib1g", "libstdc++6", "libgcc-s1", "libc6"} {
			dir, err := DebFiles(arch, pkg, logf)
			if err != nil {
				t.Fatal(err)
			}
			extra = append(extra, filepath.Join(dir, "lib", arch.Triplet), filepath.Join(dir, "usr", "lib", arch.Triplet))
		}
	}
	dst := filepath.Join(m.Share, "tools")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for tool, p := range tools {
		libs, err := LibClosure(arch, p, extra...)
		if err != nil {
			t.Fatal(err)
		}
		if err := linkOrCopy(p, filepath.Join(dst, tool)); err != nil {
			t.Fatal(err)
		}
		for name, l := range libs {
			if q := filepath.Join(m.Share, "lib", name); !fileExists(q) {
				if err := linkOrCopy(l, q); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, p := range tools {
		installLoader(t, m, p)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func archBench(t *testing.T, arch *Arch) {
	e := setupArch(t, arch)
	needBinary(t, e)
	mb := 32
	if v, err := strconv.Atoi(os.Getenv("USBFLASH_E2E_BENCH_MB")); err == nil && v > 0 {
		mb = v
	}
	img := makeImage(78, mb<<20)
	card := newCard(t, int64(mb+16)<<20)
	m := bootEnv(t, e, MachineSpec{Controller: XHCI, MemMB: 768 + 6*mb, Readers: []Reader{{Serial: "ABENCH", LUNs: []LUN{{Backing: card}}}}})
	benchTools(t, e, m)
	var cp []string
	for _, f := range []string{"raw", "xz", "zst", "gz"} {
		p := putImage(t, m, "b.img", img, f)
		cp = append(cp, "cp "+p+" /tmp/")
	}
	guest(t, m, strings.Join(cp, " && ")+" && loadmod usb-storage sd_mod && /host/tools/xz --version | head -1")
	tgt := serialTarget("ABENCH")
	out := fmt.Sprintf("file:/tmp/out.img?size=%dMiB", mb+1)
	type row struct{ group, name, script string }
	rows := []row{
		// The kernel path first: usbflash detaches usb-storage.
		{"write", "dd bs=1M oflag=direct", "dd if=/tmp/b.img of=$DEV bs=1M oflag=direct 2>/dev/null"},
		{"write", "usbflash write (no verify)", "usbflash write /tmp/b.img " + tgt + " --yes --no-verify >/dev/null"},
		{"xz", "xz -dc", "/host/tools/xz -dc /tmp/b.img.xz >/tmp/out.img"},
		{"xz", "usbflash .xz -> file:", "usbflash write /tmp/b.img.xz '" + out + "' --yes --no-verify >/dev/null"},
		{"zstd", "zstd -dc", "/host/tools/zstd -dc /tmp/b.img.zst >/tmp/out.img"},
		{"zstd", "usbflash .zst -> file:", "usbflash write /tmp/b.img.zst '" + out + "' --yes --no-verify >/dev/null"},
		{"gzip", "gzip -dc", "/host/tools/gzip -dc /tmp/b.img.gz >/tmp/out.img"},
		{"gzip", "usbflash .gz -> file:", "usbflash write /tmp/b.img.gz '" + out + "' --yes --no-verify >/dev/null"},
	}
	type meas struct{ mbps, cpuPerGiB float64 }
	res := make([]meas, len(rows))
	for i, r := range rows {
		script := `cpu() { set -- $(sed 's/.*) //' /proc/$$/stat); echo $(( ${14} + ${15} )); }
rm -f /tmp/out.img
DEV=/dev/$(sdbyserial ABENCH 2>/dev/null)
c0=$(cpu); t0=$(cut -d' ' -f1 /proc/uptime)
` + r.script + `
rc=$?; t1=$(cut -d' ' -f1 /proc/uptime); c1=$(cpu)
echo "MEASURED $t0 $t1 $c0 $c1 $(getconf CLK_TCK 2>/dev/null || echo 100)"; exit $rc`
		got, err := m.Run(script, 10*time.Minute)
		if err != nil || got.Code != 0 {
			t.Fatalf("%s: %v\n%s", r.name, err, got)
		}
		var t0, t1, c0, c1, hz float64
		for _, l := range strings.Split(got.Stdout, "\n") {
			if f := strings.Fields(l); len(f) == 6 && f[0] == "MEASURED" {
				t0, _ = strconv.ParseFloat(f[1], 64)
				t1, _ = strconv.ParseFloat(f[2], 64)
				c0, _ = strconv.ParseFloat(f[3], 64)
				c1, _ = strconv.ParseFloat(f[4], 64)
				hz, _ = strconv.ParseFloat(f[5], 64)
			}
		}
		if t1 <= t0 || hz <= 0 {
			t.Fatalf("%s: no measurement in\n%s", r.name, got)
		}
		res[i] = meas{float64(len(img)) / 1e6 / (t1 - t0), (c1 - c0) / hz / (float64(len(img)) / (1 << 30))}
		if r.group == "write" && strings.HasPrefix(r.name, "usbflash") {
			checkCard(t, card, img)
		}
		t.Logf("%-28s %7.1f MB/s %7.1f CPU s/GiB", r.name, res[i].mbps, res[i].cpuPerGiB)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s guest (%s), %d MiB image, xhci, boot %v\n", arch.Name, e.Accel.Name, mb, m.Booted.Round(time.Millisecond))
	fmt.Fprintf(&b, "| %-28s | %7s | %9s | %-24s |\n", "method", "MB/s", "CPU s/GiB", "usbflash / baseline")
	fmt.Fprintf(&b, "|%s|%s|%s|%s|\n", strings.Repeat("-", 30), strings.Repeat("-", 9), strings.Repeat("-", 11), strings.Repeat("-", 26))
	for i, r := range rows {
		ratio := ""
		if i%2 == 1 {
			base := res[i-1]
			ratio = fmt.Sprintf("%.2fx speed, %.2fx CPU", res[i].mbps/base.mbps, res[i].cpuPerGiB/base.cpuPerGiB)
		}
		fmt.Fprintf(&b, "| %-28s | %7.1f | %9.1f | %-24s |\n", r.name, res[i].mbps, res[i].cpuPerGiB, ratio)
	}
	fmt.Print(b.String())
	t.Log(b.String())
}
