//go:build unix

package stopsignal

import (
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestStopRequests: signals within the window of the last request that
// counted are that request; the window is measured from the request, so
// a person pressing again and again still gets through.
func TestStopRequests(t *testing.T) {
	const w = Window
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
	times := []time.Duration{0, time.Microsecond, Window + time.Millisecond, Window + 2*time.Millisecond}
	sent := []os.Signal{syscall.SIGTERM, syscall.SIGHUP, os.Interrupt, os.Interrupt}
	i := 0
	now := func() time.Time { i++; return start.Add(times[i-1]) }
	raw := make(chan os.Signal)
	out := requests(raw, make(chan struct{}), now, Window)
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

// TestFirstRequestSaysWhatTheCommandDoes: a first stop request says
// "stopping after the command in flight" only while no command has said
// it tells what its stop does (a station finishing its cards); the
// registration ends with its remove, however often that is called, and
// registrations nest.
func TestFirstRequestSaysWhatTheCommandDoes(t *testing.T) {
	const inFlight = "stopping after the command in flight"
	var a Aborts
	removeA := a.Says()
	removeB := a.Says()
	for _, tc := range []struct {
		name   string
		step   func()
		says   bool
		signal os.Signal
		want   string
	}{
		{"two registrations", func() {}, true, syscall.SIGTERM, "\nusbflash: terminated (Ctrl-C again to abort)\n"},
		{"one removed twice, one left", func() { removeA(); removeA() }, true, os.Interrupt, "\nusbflash: interrupted (Ctrl-C again to abort)\n"},
		{"none left", removeB, false, syscall.SIGTERM, "\nusbflash: terminated: " + inFlight + " (Ctrl-C again to abort)\n"},
	} {
		tc.step()
		if got := a.commandSays(); got != tc.says {
			t.Fatalf("%s: the command says %v, want %v", tc.name, got, tc.says)
		}
		got := firstRequest(tc.signal, a.commandSays())
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	var none *Aborts
	none.Says()() // a command run without a signal handler (tests)
}
