//go:build e2e

package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	// suites holds each architecture's prepared environment, built once per
	// run by the first test that needs it.
	suites  = map[*Arch]*suite{ArchAMD64: {}, ArchARM64: {}}
	env     *Env // the amd64 suite's, once setupEnv ran
	suiteT0 = time.Now()
	// tempDirs outlive single tests (the binary, its libraries) and are
	// removed when the run ends.
	tempDirs []string
)

type suite struct {
	once sync.Once
	env  *Env
	err  error // guest or qemu unavailable: every scenario skips with it
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	for a, s := range suites {
		if s.env != nil {
			fmt.Printf("e2e: %s accel %s, whole run %v\n", a.Name, s.env.Accel.Name, time.Since(suiteT0).Round(time.Second))
		}
	}
	os.Exit(code)
}

// moduleRoot is the usbflash module (the parent of this package's directory).
func moduleRoot() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}

// setupEnv prepares the amd64 suite (the default one) into env.
func setupEnv(t *testing.T) {
	env = setupArch(t, ArchAMD64)
}

// setupArch prepares an architecture's guest and binary once per run, or
// skips (fails in CI) when they cannot be had.
func setupArch(t *testing.T, arch *Arch) *Env {
	s := suites[arch]
	s.once.Do(func() {
		logf := func(f string, a ...any) { fmt.Printf("e2e: "+arch.Name+": "+f+"\n", a...) }
		e := &Env{}
		q, err := exec.LookPath(arch.Qemu)
		if err != nil {
			s.err = fmt.Errorf("%s not found (apt-get install %s): %v", arch.Qemu, arch.QemuPkg, err)
			return
		}
		e.Qemu = q
		t0 := time.Now()
		g, err := PrepareGuest(arch, logf)
		if err != nil {
			s.err = fmt.Errorf("cannot prepare the %s guest kernel/initramfs: %v", arch.Name, err)
			return
		}
		e.Guest = g
		logf("guest %s ready in %v (cache %s)", g.Package, time.Since(t0).Round(time.Millisecond), arch.Cache())
		e.Accel = e.ProbeAccel(logf)
		e.BuildErr = buildUsbflash(e, logf)
		s.env = e
	})
	if s.err != nil {
		skipOrFail(t, "e2e %s guest unavailable: %v", arch.Name, s.err)
	}
	return s.env
}

// skipOrFail skips, or fails when USBFLASH_E2E_REQUIRE=1 (CI: a suite that
// cannot run must not pass silently).
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("USBFLASH_E2E_REQUIRE") == "1" {
		t.Fatalf("USBFLASH_E2E_REQUIRE=1: "+format, args...)
	}
	t.Skipf(format, args...)
}

// binEnvVar names the variable that points the suite of an architecture at
// a prebuilt binary instead of building one.
func binEnvVar(arch *Arch) string {
	if arch == ArchAMD64 {
		return "USBFLASH_E2E_BIN"
	}
	return "USBFLASH_E2E_BIN_" + strings.ToUpper(arch.Name)
}

// buildUsbflash builds the binary under test for the guest's architecture
// (or takes the prebuilt one named by binEnvVar) and collects the shared
// libraries it needs in the guest.
func buildUsbflash(e *Env, logf func(string, ...any)) error {
	arch := e.Guest.Arch
	bin := os.Getenv(binEnvVar(arch))
	if bin == "" {
		dir, err := os.MkdirTemp("", "usbflash-e2e-bin")
		if err != nil {
			return err
		}
		tempDirs = append(tempDirs, dir)
		bin = filepath.Join(dir, "usbflash")
		// What `make build` and `make cross` do: the default (usbfs)
		// backend, static, no cgo, for any architecture.
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/usbflash")
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch.Name)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/usbflash for %s: %v\n%s", arch.Name, err, out)
		}
	}
	libs, err := LibClosure(arch, bin)
	if err != nil {
		return err
	}
	if _, linked := libs[libusbSoname]; !linked {
		loads, err := loadsLibusb(bin)
		if err != nil {
			return err
		}
		if loads {
			// The libusbdl build loads libusb at run time: ship it and
			// what it needs, as the linked build's closure does.
			lib, err := findLib(arch, libusbSoname, nil)
			if err != nil {
				return fmt.Errorf("%s loads %s at run time: %w (apt-get install libusb-1.0-0)", bin, libusbSoname, err)
			}
			more, err := LibClosure(arch, lib)
			if err != nil {
				return err
			}
			libs[libusbSoname] = lib
			maps.Copy(libs, more)
			e.LoadsLibusb = true
		}
	}
	e.Libs = libs
	e.Usbflash = bin
	logf("usbflash %s, libs %v", bin, e.Libs)
	return nil
}

// libusbSoname is the name libusb-1.0 is linked, and loaded, by.
const libusbSoname = "libusb-1.0.so.0"

// loadsLibusb tells whether the binary is a libusbdl build (-tags
// libusbdl), which loads libusb at run time instead of linking it: its
// backend's package is in its symbol table.
func loadsLibusb(bin string) (bool, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte("usbflash/usbms/libusbdl.")), nil
}

// needCLI skips when the binary does not build yet.
func needCLI(t *testing.T) {
	setupEnv(t)
	needBinary(t, env)
}

// needBinary skips when the environment's binary does not build.
func needBinary(t *testing.T, e *Env) {
	t.Helper()
	if e.BuildErr != nil {
		skipOrFail(t, "usbflash does not build for %s (yet): %v", e.Guest.Arch.Name, e.BuildErr)
	}
}

// optIn skips a test that runs only when asked for: when -run names it
// (name is a substring of the pattern) or envVar is 1.
func optIn(t *testing.T, name, envVar string) {
	t.Helper()
	if os.Getenv(envVar) != "1" && !strings.Contains(flag.Lookup("test.run").Value.String(), name) {
		t.Skipf("%s runs only with -run %s or %s=1", t.Name(), name, envVar)
	}
}

// boot starts a guest for spec; it is shut down when the test ends.
func boot(t *testing.T, spec MachineSpec) *Machine {
	t.Helper()
	needCLI(t)
	return bootAny(t, spec)
}

// bootAny boots even when usbflash does not build (infrastructure tests).
func bootAny(t *testing.T, spec MachineSpec) *Machine {
	t.Helper()
	setupEnv(t)
	return bootEnv(t, env, spec)
}

// bootEnv boots a machine of the environment's architecture.
func bootEnv(t *testing.T, e *Env, spec MachineSpec) *Machine {
	t.Helper()
	m, err := e.Start(spec, t.TempDir(), t.Logf)
	if err != nil {
		t.Fatalf("boot: %v", err)
	}
	t.Cleanup(func() {
		m.Shutdown()
		if t.Failed() {
			t.Logf("guest console (tail):\n%s", tail(m.Console(), 4000))
		}
	})
	return m
}

// sh quotes words for the guest shell.
func sh(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`*?[]{}()<>|&;#~!") {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// usbflash runs the binary in the guest with a guest-side timeout (a hang
// shows up as exit 143) and a host-side one a little longer.
func usbflash(t *testing.T, m *Machine, timeout time.Duration, args ...string) Result {
	t.Helper()
	secs := int(timeout / time.Second)
	r, err := m.Run(fmt.Sprintf("timeout -s TERM %d usbflash %s", secs, sh(args...)), timeout+20*time.Second)
	if err != nil {
		t.Fatalf("usbflash %s: %v\n%s", strings.Join(args, " "), err, r)
	}
	t.Logf("$ usbflash %s\n%s", strings.Join(args, " "), r)
	return r
}

// guest runs a plain shell script and fails the test unless it exits 0.
func guest(t *testing.T, m *Machine, script string) Result {
	t.Helper()
	r, err := m.Run(script, 2*time.Minute)
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, r)
	}
	if r.Code != 0 {
		t.Fatalf("%s:\n%s", script, r)
	}
	return r
}
