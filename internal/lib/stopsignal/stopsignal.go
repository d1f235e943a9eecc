// Package stopsignal turns the signals that ask a process to stop (Ctrl-C,
// SIGTERM, SIGHUP) into stop requests: the first cancels a context so a
// command can finish what is in flight and report, the second runs the
// command's abort steps and exits, a third exits at once.
package stopsignal

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Aborts is what a command must do before the process exits on a second
// interrupt: keep bytes that only it holds (a region --preserve saved),
// remove a file it left unfinished. A step runs beside the command, which
// may be stuck in a command the reader does not answer: it touches no
// device. It also holds whether the command says itself what a first
// stop request does (Says).
type Aborts struct {
	mu    sync.Mutex
	next  int
	steps map[int]func()
	// says counts the registrations of Says in force.
	says int
}

// Says registers, until the returned func is called, that the command
// says itself what a first stop request does, as that stop begins: a
// station that finishes the cards being written, for a while, before it
// stops them. The first request is then only acknowledged; "stopping
// after the command in flight" would be wrong there, and this package
// cannot know what the command does instead.
func (s *Aborts) Says() (remove func()) {
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.says++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.says--
		})
	}
}

// commandSays reports whether a Says registration is in force.
func (s *Aborts) commandSays() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.says > 0
}

// firstRequest is what a first stop request by sig prints: what the
// stop does, unless the command says that itself.
func firstRequest(sig os.Signal, commandSays bool) string {
	if commandSays {
		return fmt.Sprintf("\nusbflash: %s (Ctrl-C again to abort)\n", signalName(sig))
	}
	return fmt.Sprintf("\nusbflash: %s: stopping after the command in flight (Ctrl-C again to abort)\n", signalName(sig))
}

// Add registers step until the returned func is called.
func (s *Aborts) Add(step func()) (remove func()) {
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.steps == nil {
		s.steps = map[int]func(){}
	}
	id := s.next
	s.next++
	s.steps[id] = step
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.steps, id)
	}
}

// take returns the steps registered now, newest first, and forgets them.
func (s *Aborts) take() []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	for id := range s.steps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var out []func()
	for i := len(ids) - 1; i >= 0; i-- {
		out = append(out, s.steps[ids[i]])
	}
	s.steps = nil
	return out
}

// Window is how close together signals arrive that are one stop
// request. One sender's signals come microseconds apart: GNU timeout
// signals the child and then its process group, systemd's stop signals
// every process of the unit's cgroup (SIGTERM, then SIGHUP with
// SendSIGHUP=), a closing terminal sends SIGHUP to the session. Even on a
// loaded machine their arrival is milliseconds apart at most. A person's
// second Ctrl-C comes after seeing the first take effect, a visual
// reaction time (about 250 ms) or more later; a double tap faster than the
// window counts once and the stop stays graceful, and a third press
// Aborts.
const Window = 250 * time.Millisecond

// stopRequests tells stop requests from the signals that carry them: a
// signal that arrives within window of the last one that counted is part
// of the same request. The window is measured from the request, not from
// the last signal, so a person pressing Ctrl-C over and over still
// reaches the next step.
type stopRequests struct {
	window time.Duration
	last   time.Time
	n      int
}

// add takes a signal that arrived at at and says whether it is a new stop
// request.
func (r *stopRequests) add(at time.Time) bool {
	if r.n > 0 && at.Sub(r.last) < r.window {
		return false
	}
	r.n++
	r.last = at
	return true
}

// requests passes on the signals of sig that are new stop requests
// (stopRequests), each stamped with now() as it is taken, until sig is
// closed (then the result is closed too) or done is (then it is left
// open: a handler still waiting on it must not take that for a signal). Stamping happens here, in a goroutine that does
// nothing else, so a handler slow to take the request (its message to a
// stderr that blocks) does not make two signals of one sender look far
// apart.
func requests(sig <-chan os.Signal, done <-chan struct{}, now func() time.Time, window time.Duration) <-chan os.Signal {
	out := make(chan os.Signal, 3)
	go func() {
		r := stopRequests{window: window}
		for {
			select {
			case s, ok := <-sig:
				if !ok {
					close(out)
					return
				}
				if !r.add(now()) {
					continue
				}
				select {
				case out <- s:
				default:
					// Three requests are waiting: the last step
					// (exit at once) is already asked for.
				}
			case <-done:
				return
			}
		}
	}()
	return out
}

// Context cancels on the first stop request (Ctrl-C, SIGTERM or
// SIGHUP, a dropped ssh session; signals within Window of each other
// are one request) so a write can finish the command in flight, sync and
// report how far it got. A second request runs the command's abort steps,
// if it registered any, and exits; a third, or a second with nothing to
// do, exits at once; both exit with exitCode. The returned func stops
// listening and waits for an exit under way.
func Context(stderr io.Writer, exitCode int) (context.Context, *Aborts, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	steps := &Aborts{}
	raw := make(chan os.Signal, 3)
	signal.Notify(raw, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	sig := requests(raw, done, time.Now, Window)
	// Held from the second request on: the process ends in the signal's
	// goroutine, and main must not exit with its own code meanwhile.
	var exiting sync.Mutex
	go func() {
		var s os.Signal
		select {
		case s = <-sig:
		case <-done:
			return
		}
		fmt.Fprint(stderr, firstRequest(s, steps.commandSays()))
		cancel()
		select {
		case <-sig:
		case <-done:
			return
		}
		exiting.Lock()
		todo := steps.take()
		if len(todo) == 0 {
			fmt.Fprintln(stderr, "usbflash: aborted")
			os.Exit(exitCode)
		}
		fmt.Fprintln(stderr, "usbflash: aborting (Ctrl-C again to abort at once)")
		finished := make(chan struct{})
		go func() {
			for _, step := range todo {
				step()
			}
			close(finished)
		}()
		select {
		case <-finished:
		case <-sig:
			fmt.Fprintln(stderr, "usbflash: aborted")
		}
		os.Exit(exitCode)
	}()
	return ctx, steps, func() {
		signal.Stop(raw)
		close(done)
		exiting.Lock()
		cancel()
	}
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "interrupted"
	case syscall.SIGTERM:
		return "terminated"
	case syscall.SIGHUP:
		return "hangup (the terminal went away)"
	}
	return s.String()
}
