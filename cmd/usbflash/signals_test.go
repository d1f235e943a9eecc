//go:build unix

package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usbflash/usbflash/internal/lib/stopsignal"
)

// usbflashBinary is this test binary under the name usbflash (a link that
// TestMain runs as main): signals, a closed stdout and resource limits are
// properties of the process, not of run, and the binary need not be built
// again for them.
func usbflashBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "usbflash")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runIn runs the binary bin in dir, env added to its environment, with
// no input, to its end.
func runIn(t *testing.T, bin, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return result{exitStatusOf(t, cmd.Run()), stdout.String(), stderr.String()}
}

// startWrite starts the binary and returns it with its stdout as lines.
func startWrite(t *testing.T, bin string, stderr *bytes.Buffer, args ...string) (*exec.Cmd, *bufio.Scanner, func() error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = stderr
	lines, closeOut := startLines(t, cmd)
	return cmd, lines, closeOut
}

// startLines starts cmd and returns its stdout as lines, and what closes
// it.
func startLines(t *testing.T, cmd *exec.Cmd) (*bufio.Scanner, func() error) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return bufio.NewScanner(out), out.Close
}

func exitStatusOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("killed by %v", ws.Signal())
		}
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

// TestProcess holds what belongs to the usbflash process rather than to
// run, one test each: signals (one stop request however it is delivered;
// a second one runs the command's abort steps, which are each command's
// session's to test: region.TestAbandon, fakecheck.TestProbeAbandon,
// session's backup Abort), a closed stdout, a file size limit. What the
// binary links is internal/layers' (TestBinaryInits).
func TestProcess(t *testing.T) {
	t.Parallel()
	procs := concurrently(t)
	defer procs.wait()
	bin := usbflashBinary(t)
	img := testImage(4 << 20)
	image := writeFile(t, "os.img", img)

	procs.run("closed stdout does not stop a write", func(t *testing.T) {
		card := filepath.Join(t.TempDir(), "card.img")
		var stderr bytes.Buffer
		// usbflash write --json ... | head -1. The card takes a second
		// to write and one to verify: the pipe closes while the write
		// goes on, before its events would all fit in the pipe's buffer.
		cmd, lines, closeOut := startWrite(t, bin, &stderr, "write", "--json", "--yes", "--transfer-size", "256KiB",
			image, "sim:"+card+"?size=8MiB&speed=4MB/s")
		if !lines.Scan() || !strings.Contains(lines.Text(), `"event":"start"`) {
			t.Fatalf("first line %q", lines.Text())
		}
		closeOut()
		if code := exitStatusOf(t, cmd.Wait()); code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
		got, _ := os.ReadFile(card)
		if !bytes.Equal(got[:len(img)], img) {
			t.Error("the card does not hold the image")
		}
		// The outcome still reaches a person.
		if !strings.Contains(stderr.String(), "Verified 4.19 MB read back") {
			t.Errorf("stderr %q does not report the outcome", stderr.String())
		}
	})

	procs.run("read to a disk that takes no more", func(t *testing.T) {
		sh, err := exec.LookPath("sh")
		if err != nil {
			t.Skip("no sh to set a file size limit with")
		}
		card := cardWith(t, testImage(4<<20), 4<<20)
		dir := t.TempDir()
		out := filepath.Join(dir, "b.img")
		// ulimit -f 1024: files of at most 1 MiB (in 1 KiB units in most
		// shells, 512-byte units in a few: either is less than the card).
		cmd := exec.Command(sh, "-c", `ulimit -f 1024 && exec "$0" "$@"`, bin, "read", "sim:"+card, out)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if code := exitStatusOf(t, cmd.Run()); code != exitDevice {
			t.Fatalf("exit %d, want %d\n%s", code, exitDevice, stderr.String())
		}
		if msg := stderr.String(); !strings.Contains(msg, "usbflash: writing the backup of sim:"+card+" at byte offset") ||
			!strings.Contains(msg, "writing "+out+".part: file too large") ||
			!strings.Contains(msg, "Check the disk the file is written to") {
			t.Errorf("stderr %q does not say that the output file failed", msg)
		}
		noFiles(t, dir)
	})

	procs.run("a second signal during read removes OUT.part", func(t *testing.T) {
		card := cardWith(t, holeyImage(), 16<<20)
		dir := t.TempDir()
		// Each READ takes 2 s: the first signal waits for the one in flight.
		cmd := exec.Command(bin, "read", "--json", "--transfer-size", "2MiB", "sim:"+card+"?speed=1MB/s", filepath.Join(dir, "b.img.zst"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		// After the first READ: the second is in flight for 2 s. (At the
		// phase's start the first signal may stop the read before any
		// command, and the process ends before the second signal.)
		signalAt(t, cmd, lines, `"done":2097152`, syscall.SIGINT)
		// Two signals sent at once are one stop request: the second goes
		// once the first was taken and its window passed.
		secondRequestAt(t, cmd, bufio.NewScanner(stderr), "stopping after the command in flight", syscall.SIGINT)
		var rest strings.Builder
		for lines.Scan() {
			rest.WriteString(lines.Text() + "\n")
		}
		if code := exitStatusOf(t, cmd.Wait()); code != exitCancelled {
			t.Fatalf("exit %d, want %d", code, exitCancelled)
		}
		if e := lastEvent(t, rest.String(), "error"); !strings.Contains(e["message"].(string), "b.img.zst.part was removed") {
			t.Errorf("error event %v", e)
		}
		noFiles(t, dir)
	})

	// One stop request: the binary runs as a closing terminal,
	// service managers and timeout(1) stop it: one request, delivered as
	// several signals microseconds apart to the process and to its group. The write must take the
	// graceful path: finish the command in flight, sync, say how far it got,
	// exit 130, the first transfer zeroed and the rest of what it says it
	// wrote on the card.
	procs.run("one stop request is one stop", func(t *testing.T) {
		timeoutCmd, err := exec.LookPath("timeout")
		if err != nil {
			t.Fatalf("no timeout(1) on PATH (coreutils): %v", err)
		}
		img := testImage(8 << 20)
		image := writeFile(t, "os8.img", img)
		// The child and then the process group, as GNU timeout's cleanup
		// sends them; the group is the child's own (Setpgid).
		group := func(sigs ...syscall.Signal) func(cmd *exec.Cmd) error {
			return func(cmd *exec.Cmd) error {
				for _, s := range sigs {
					if err := syscall.Kill(cmd.Process.Pid, s); err != nil {
						return err
					}
					if err := syscall.Kill(-cmd.Process.Pid, s); err != nil {
						return err
					}
				}
				return nil
			}
		}
		// timeout's own timer: SIGALRM is what it gets when the time is up,
		// so the test picks the moment instead of guessing a duration.
		timedOut := func(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGALRM) }
		stops := concurrently(t)
		defer stops.wait()
		for _, tc := range []struct {
			name string
			wrap []string // the command line before usbflash's
			pgid bool
			stop func(cmd *exec.Cmd) error
			// saying: the signal the message names (pending signals are
			// delivered lowest number first, so SIGHUP may come first).
			saying []string
		}{
			{"SIGHUP: the terminal went away", nil, false, func(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGHUP) },
				[]string{"hangup (the terminal went away)"}},
			{"timeout -s INT", []string{timeoutCmd, "--preserve-status", "-s", "INT", "1h"}, false, timedOut, []string{"interrupted"}},
			{"timeout -s TERM", []string{timeoutCmd, "--preserve-status", "-s", "TERM", "1h"}, false, timedOut, []string{"terminated"}},
			{"SIGINT to the process and its group", nil, true, group(syscall.SIGINT), []string{"interrupted"}},
			{"SIGTERM then SIGHUP to the process and its group (systemd, SendSIGHUP=yes)", nil, true, group(syscall.SIGTERM, syscall.SIGHUP), []string{"terminated", "hangup (the terminal went away)"}},
		} {
			stops.run(tc.name, func(t *testing.T) {
				card := filepath.Join(t.TempDir(), "card.img")
				args := append(slices.Clone(tc.wrap), bin, "write", "--json", "--yes", "--transfer-size", "256KiB",
					image, "sim:"+card+"?size=16MiB&speed=1MB/s")
				cmd := exec.Command(args[0], args[1:]...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: tc.pgid}
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				lines, _ := startLines(t, cmd)
				// Once a transfer past the first is on the card: the
				// write has begun however slow the machine is.
				for lines.Scan() {
					if l := lines.Text(); strings.Contains(l, `"phase":"write"`) && regexp.MustCompile(`"done":[1-9]`).MatchString(l) {
						break
					}
				}
				if err := tc.stop(cmd); err != nil {
					t.Fatal(err)
				}
				var rest strings.Builder
				for lines.Scan() {
					rest.WriteString(lines.Text() + "\n")
				}
				if code := exitStatusOf(t, cmd.Wait()); code != exitCancelled {
					t.Fatalf("exit %d, want %d; stderr %q", code, exitCancelled, stderr.String())
				}
				msg := stderr.String()
				named := slices.ContainsFunc(tc.saying, func(s string) bool { return strings.Contains(msg, "usbflash: "+s+": stopping") })
				if strings.Contains(msg, "aborted") || strings.Count(msg, "stopping after the command in flight") != 1 || !named {
					t.Errorf("stderr %q: want one graceful stop, said once", msg)
				}
				e := lastEvent(t, rest.String(), "error")
				m := regexp.MustCompile(`cancelled after .* \(up to LBA (\d+)\); the first transfer was left zeroed`).FindStringSubmatch(e["message"].(string))
				if e["name"] != "cancelled" || m == nil {
					t.Fatalf("error event %v does not say how far the write got", e)
				}
				upTo, _ := strconv.Atoi(m[1])
				got, _ := os.ReadFile(card)
				if bytes.Count(got[:256<<10], []byte{0}) != 256<<10 {
					t.Error("the first transfer's region is not zero after a stopped write")
				}
				if end := upTo * 512; end <= 256<<10 || !bytes.Equal(got[256<<10:end], img[256<<10:end]) {
					t.Errorf("the card does not hold the image from the first transfer's end up to LBA %d", upTo)
				}
			})
		}
	})

}

// signalAt reads lines until one holds what, then sends sig.
func signalAt(t *testing.T, cmd *exec.Cmd, lines *bufio.Scanner, what string, sig syscall.Signal) {
	t.Helper()
	waitFor(t, cmd, lines, what)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// secondRequestAt reads lines until one holds what, then sends sig once
// the first request's window has passed, so that it is a second stop
// request and not part of the first.
func secondRequestAt(t *testing.T, cmd *exec.Cmd, lines *bufio.Scanner, what string, sig syscall.Signal) {
	t.Helper()
	waitFor(t, cmd, lines, what)
	time.Sleep(stopsignal.Window)
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// waitFor reads lines until one holds what; when none does, it kills the
// process and fails, with the lines it read.
func waitFor(t *testing.T, cmd *exec.Cmd, lines *bufio.Scanner, what string) {
	t.Helper()
	var seen []string
	for lines.Scan() {
		if strings.Contains(lines.Text(), what) {
			return
		}
		seen = append(seen, lines.Text())
	}
	cmd.Process.Kill()
	t.Fatalf("no line with %q among:\n%s", what, strings.Join(seen, "\n"))
}

// group runs subtests at once, each t.Run in a goroutine of its own (as
// testing allows), in the one parallel slot of the test that made it.
// TestProcess's subtests wait on child processes and on their simulated
// cards' clocks, not on the CPU; as parallel subtests they would each
// hold one of the slots go test has as many of as there are CPUs.
type group struct {
	t  *testing.T
	wg sync.WaitGroup
}

func concurrently(t *testing.T) *group { return &group{t: t} }

// run starts the subtest f.
func (g *group) run(name string, f func(t *testing.T)) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.t.Run(name, f)
	}()
}

// wait returns once every subtest has ended: before the test that made
// the group returns.
func (g *group) wait() { g.wg.Wait() }
