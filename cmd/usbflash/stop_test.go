//go:build unix

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopRequests: signals within the window of the last request that
// counted are that request; the window is measured from the request, so
// a person pressing again and again still gets through.
func TestStopRequests(t *testing.T) {
	const w = stopWindow
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name    string
		arrive  []time.Duration // after the first signal
		counted []bool
	}{
		{"one signal", []time.Duration{0}, []bool{true}},
		{"timeout: the child, then its process group", []time.Duration{0, ms(0.02)}, []bool{true, false}},
		{"systemd: SIGTERM to the cgroup, then SIGHUP", []time.Duration{0, ms(0.01), ms(0.03)}, []bool{true, false, false}},
		{"a loaded machine delays the second", []time.Duration{0, ms(40)}, []bool{true, false}},
		{"just inside the window", []time.Duration{0, w - 1}, []bool{true, false}},
		{"at the window", []time.Duration{0, w}, []bool{true, true}},
		{"a person's second Ctrl-C", []time.Duration{0, ms(600)}, []bool{true, true}},
		{"timeout, then a person's Ctrl-C", []time.Duration{0, ms(0.02), ms(900), ms(900.02)}, []bool{true, false, true, false}},
		{"Ctrl-C pressed every 100 ms", []time.Duration{0, ms(100), ms(200), ms(300), ms(400), ms(500), ms(600)},
			[]bool{true, false, false, true, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := stopRequests{window: w}
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var got []bool
			for _, d := range tc.arrive {
				got = append(got, r.add(start.Add(d)))
			}
			if !slices.Equal(got, tc.counted) {
				t.Errorf("counted %v, want %v", got, tc.counted)
			}
		})
	}
}

// TestRequestsStampsEachSignal: requests passes on the first signal of
// each request, read with the clock it is given, and ends when its input
// does.
func TestRequestsStampsEachSignal(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	times := []time.Duration{0, time.Microsecond, stopWindow + time.Millisecond, stopWindow + 2*time.Millisecond}
	sent := []os.Signal{syscall.SIGTERM, syscall.SIGHUP, os.Interrupt, os.Interrupt}
	i := 0
	now := func() time.Time { i++; return start.Add(times[i-1]) }
	raw := make(chan os.Signal)
	out := requests(raw, make(chan struct{}), now, stopWindow)
	for _, s := range sent {
		raw <- s
	}
	close(raw)
	var got []os.Signal
	for s := range out {
		got = append(got, s)
	}
	if want := []os.Signal{syscall.SIGTERM, os.Interrupt}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if i != len(sent) {
		t.Errorf("the clock was read %d times for %d signals", i, len(sent))
	}
}

// TestOneStopRequestIsOneStop runs the binary as a closing terminal,
// service managers and timeout(1) stop it: one request, delivered as
// several signals microseconds apart to the process and to its group. The write must take the
// graceful path: finish the command in flight, sync, say how far it got,
// exit 130, the first transfer zeroed and the rest of what it says it
// wrote on the card.
func TestOneStopRequestIsOneStop(t *testing.T) {
	t.Parallel()
	timeoutCmd, err := exec.LookPath("timeout")
	if err != nil {
		t.Fatalf("no timeout(1) on PATH (coreutils): %v", err)
	}
	bin := buildBinary(t)
	img := testImage(8 << 20)
	image := writeFile(t, "os.img", img)
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
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
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
}

// secondRequestAt reads lines until one holds what, then sends sig once
// the first request's window has passed, so that it is a second stop
// request and not part of the first.
func secondRequestAt(t *testing.T, cmd *exec.Cmd, lines *bufio.Scanner, what string, sig syscall.Signal) {
	t.Helper()
	for lines.Scan() {
		if strings.Contains(lines.Text(), what) {
			time.Sleep(stopWindow)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	cmd.Process.Kill()
	t.Fatalf("no line with %q", what)
}
