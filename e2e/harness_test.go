//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	envOnce sync.Once
	env     *Env
	envErr  error // guest or qemu unavailable: every scenario skips with it
	suiteT0 = time.Now()
	// tempDirs outlive single tests (the binary, its libraries) and are
	// removed when the run ends.
	tempDirs []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	if env != nil {
		fmt.Printf("e2e: accel %s, whole run %v\n", env.Accel.Name, time.Since(suiteT0).Round(time.Second))
	}
	os.Exit(code)
}

// moduleRoot is the usbflash module (the parent of this package's directory).
func moduleRoot() string {
	wd, _ := os.Getwd()
	return filepath.Dir(wd)
}

func setupEnv(t *testing.T) {
	envOnce.Do(func() {
		logf := func(f string, a ...any) { fmt.Printf("e2e: "+f+"\n", a...) }
		e := &Env{}
		q, err := exec.LookPath("qemu-system-x86_64")
		if err != nil {
			envErr = fmt.Errorf("qemu-system-x86_64 not found (apt-get install qemu-system-x86): %v", err)
			return
		}
		e.Qemu = q
		t0 := time.Now()
		g, err := PrepareGuest(logf)
		if err != nil {
			envErr = fmt.Errorf("cannot prepare the guest kernel/initramfs: %v", err)
			return
		}
		e.Guest = g
		logf("guest %s ready in %v (cache %s)", g.Package, time.Since(t0).Round(time.Millisecond), CacheDir())
		e.Accel = e.ProbeAccel(logf)
		e.BuildErr = buildUsbflash(e, logf)
		env = e
	})
	if envErr != nil {
		skipOrFail(t, "e2e guest unavailable: %v", envErr)
	}
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

// buildUsbflash builds the binary under test (or takes USBFLASH_E2E_BIN) and
// collects the shared libraries it needs for the guest.
func buildUsbflash(e *Env, logf func(string, ...any)) error {
	bin := os.Getenv("USBFLASH_E2E_BIN")
	if bin == "" {
		dir, err := os.MkdirTemp("", "usbflash-e2e-bin")
		if err != nil {
			return err
		}
		tempDirs = append(tempDirs, dir)
		bin = filepath.Join(dir, "usbflash")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/usbflash")
		cmd.Dir = moduleRoot()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/usbflash: %v\n%s", err, out)
		}
	}
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil && !bytes.Contains(out, []byte("not a dynamic executable")) {
		return fmt.Errorf("ldd %s: %v\n%s", bin, err, out)
	}
	re := regexp.MustCompile(`(?m)^\s*(?:\S+ => )?(/\S+) \(0x`)
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		real, err := filepath.EvalSymlinks(m[1])
		if err != nil {
			return err
		}
		// The guest needs it under its soname (the name ldd shows).
		d, err := os.MkdirTemp("", "usbflash-e2e-lib")
		if err != nil {
			return err
		}
		tempDirs = append(tempDirs, d)
		p := filepath.Join(d, filepath.Base(m[1]))
		if err := linkOrCopy(real, p); err != nil {
			return err
		}
		e.Libs = append(e.Libs, p)
	}
	e.Usbflash = bin
	logf("usbflash %s, libs %v", bin, e.Libs)
	return nil
}

// needCLI skips when the binary does not build yet.
func needCLI(t *testing.T) {
	setupEnv(t)
	if env.BuildErr != nil {
		skipOrFail(t, "usbflash does not build (yet): %v", env.BuildErr)
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
	m, err := env.Start(spec, t.TempDir(), t.Logf)
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
