// Command usbflash writes OS images to SD cards and USB sticks by speaking
// USB Bulk-Only Transport and SCSI to the card reader itself, past the
// operating system's block layer and page cache.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

func main() {
	// A closed stdout (usbflash write --json | head -1) must not kill a
	// write midway: writes to it fail with EPIPE instead, and the write
	// finishes, syncs and reports on stderr.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signalContext(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it with their own context,
// arguments and streams, and read the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runApp(ctx, &app{stdin: stdin, stdout: stdout, stderr: stderr,
		interactive: isTerminalReader(stdin), stderrTerminal: isTerminal(stderr)}, args)
}

// runApp runs one command line with a's streams and says how it ended.
func runApp(ctx context.Context, a *app, args []string) (code int) {
	// A bug must not exit 2, which scripts read as their own mistake: it
	// is an internal error (1), reported as one, with where it happened.
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("internal error: %v (please report it, with this:)\n%s", r, debug.Stack())
			newReporter(a.stdout, a.stderr, reporterOptions{json: jsonRequested(nil, args)}).fail(err, exitInternal)
			code = exitInternal
		}
	}()
	root := newRootCommand(a)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code = exitCode(err)
	if !errorAlreadyReported(err) {
		// Under --json every failure is an error event on stdout, even
		// one found before the command ran (a bad flag or target).
		newReporter(a.stdout, a.stderr, reporterOptions{json: jsonRequested(c, args)}).fail(err, code)
	}
	return code
}

// signalContext cancels on the first Ctrl-C, SIGTERM or SIGHUP (a dropped
// ssh session) so a write can finish the command in flight, sync and
// report how far it got; a second signal exits at once.
func signalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		var s os.Signal
		select {
		case s = <-sig:
		case <-done:
			return
		}
		fmt.Fprintf(stderr, "\nusbflash: %s: stopping after the command in flight (Ctrl-C again to abort at once)\n", signalName(s))
		cancel()
		select {
		case <-sig:
			fmt.Fprintln(stderr, "usbflash: aborted")
			os.Exit(exitCancelled)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
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
