//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSlowHostProfile profiles usbflash's own CPU in the slow host (the
// one-vCPU TCG guest): a build with -tags profile writes the 384 MiB image
// of TestSlowHostBench with and without verify, and at 4 MiB transfers,
// each run leaving a CPU profile (runtime/pprof, the guest's SIGPROF) and
// its --json events (with their times) in $USBFLASH_E2E_PROFILE_DIR (a temporary directory
// when unset). USBFLASH_E2E_PROFILE_ARCH=arm64 profiles in the arm64
// guest, USBFLASH_E2E_PROFILE_RUNS=write,write-verify only the runs
// named, USBFLASH_E2E_BENCH_CONTROLLERS=xhci one controller. Opt-in: -run
// SlowHostProfile or USBFLASH_E2E_BENCH=1.
func TestSlowHostProfile(t *testing.T) {
	optIn(t, "SlowHostProfile", "USBFLASH_E2E_BENCH")
	const mib = 384
	img := makeImage(384, mib<<20)
	dir := os.Getenv("USBFLASH_E2E_PROFILE_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	arch := ArchAMD64
	if os.Getenv("USBFLASH_E2E_PROFILE_ARCH") == "arm64" {
		arch = ArchARM64
	}
	bin := filepath.Join(t.TempDir(), "usbflash-profile")
	cmd := exec.Command("go", "build", "-tags", "profile", "-o", bin, "./cmd/usbflash")
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch.Name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build with -tags profile: %v\n%s", err, out)
	}
	tgt := serialTarget("PROF1")
	// $TGT is the reader for usbflash, $DEV its /dev/sdX for dd; the 1 MiB
	// runs are the fixed cost alone: opening (taking the reader from
	// usb-storage), the first and last commands, SYNCHRONIZE CACHE,
	// handing the reader back, and the process.
	runs := []struct{ name, cmd string }{
		{"write", "usbflash-profile write --yes --json /tmp/p.img $TGT --no-verify"},
		{"write-verify", "usbflash-profile write --yes --json /tmp/p.img $TGT"},
		{"write-4MiB", "usbflash-profile write --yes --json /tmp/p.img $TGT --no-verify --transfer-size 4MiB"},
		{"write-4MiB-verify", "usbflash-profile write --yes --json /tmp/p.img $TGT --transfer-size 4MiB"},
		{"verify", "usbflash-profile verify --json /tmp/p.img $TGT"},
		{"verify-4MiB", "usbflash-profile verify --json /tmp/p.img $TGT --transfer-size 4MiB"},
		{"dd-read", "dd if=$DEV of=/dev/null bs=1M count=384 iflag=direct"},
		{"info", "usbflash-profile info --json $TGT"},
		{"write-1MiB", "usbflash-profile write --yes --json /tmp/s.img $TGT --no-verify"},
		{"dd-1MiB", "dd if=/tmp/s.img of=$DEV bs=1M oflag=direct"},
		{"dd-1MiB-fsync", "dd if=/tmp/s.img of=$DEV bs=1M oflag=direct conv=fsync"},
	}
	if only := os.Getenv("USBFLASH_E2E_PROFILE_RUNS"); only != "" {
		want := strings.Split(only, ",")
		runs = slices.DeleteFunc(runs, func(r struct{ name, cmd string }) bool { return !slices.Contains(want, r.name) })
	}
	var summary strings.Builder
	for _, c := range benchControllers(t) {
		t.Run(string(c), func(t *testing.T) {
			e := setupArch(t, arch)
			needBinary(t, e)
			card := newCard(t, (mib+16)<<20)
			m := bootEnv(t, e, MachineSpec{Controller: c, MemMB: 768 + mib,
				Readers: []Reader{{Serial: "PROF1", LUNs: []LUN{{Backing: card}}}}})
			shipProbe(t, m, "usbflash-profile", bin)
			guest(t, m, "cp /host/bin/usbflash-profile /bin/")
			p := putImage(t, m, "p.img", img, "raw")
			guest(t, m, fmt.Sprintf("cp %s /tmp/p.img && rm %s", p, p))
			guest(t, m, "head -c 1048576 /tmp/p.img >/tmp/s.img")
			guest(t, m, "loadmod usb-storage sd_mod")
			for _, r := range runs {
				name := fmt.Sprintf("%s-%s-%s", arch.Name, c, r.name)
				script := fmt.Sprintf("TGT=%s\nDEV=/dev/$(sdbyserial PROF1)\nt0=$(cut -d' ' -f1 /proc/uptime)\n"+
					"USBFLASH_CPUPROFILE=/host/%s.prof %s >/tmp/out 2>&1\n"+
					"rc=$?; t1=$(cut -d' ' -f1 /proc/uptime); echo \"ELAPSED $t0 $t1\"; times; tail -n 1 /tmp/out; "+
					"cp /tmp/out /host/%s.json; touch /host/%s.prof; exit $rc",
					tgt, name, r.cmd, name, name)
				res, err := m.Run(script, 10*time.Minute)
				if err != nil || res.Code != 0 {
					t.Fatalf("%s: %v\n%s", name, err, res)
				}
				line := fmt.Sprintf("%s: %.2f s, CPU %.2f s\n%s\n", name, elapsedOf(res.Stdout), childCPU(res.Stdout), res.Stdout)
				summary.WriteString(line)
				t.Log(line)
				for _, ext := range []string{".prof", ".json"} {
					if err := linkOrCopy(filepath.Join(m.Share, name+ext), filepath.Join(dir, name+ext)); err != nil {
						t.Error(err)
					}
				}
				guest(t, m, "i=0; while ! sdbyserial PROF1 >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; sleep 1")
			}
		})
	}
	fmt.Print(summary.String())
}
