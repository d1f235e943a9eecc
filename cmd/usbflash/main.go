// Command usbflash writes OS images to SD cards and USB sticks by speaking
// USB mass storage (Bulk-Only Transport or USB Attached SCSI) and SCSI to
// the card reader itself, past the operating system's block layer and page
// cache.
package main

// docs/events.md, the reference of the --json events, is generated from
// their schema:
//
//go:generate go run ../../internal/ui/eventsdoc/gen ../../internal/ui/jsonevents/events.schema.json ../../docs/events.md

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	// The static binary reads images over HTTPS on systems without a CA
	// bundle too (a minimal rootfs, a rescue system): these roots are used
	// only when the system has none.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/lib/stopsignal"
	"github.com/usbflash/usbflash/internal/ui/termui"
)

func main() {
	// A closed stdout (usbflash write --json | head -1) must not kill a
	// write midway: writes to it fail with EPIPE instead, and the write
	// finishes, syncs and reports on stderr.
	signal.Ignore(syscall.SIGPIPE)
	stopProfiling := startProfiling()
	ctx, aborts, stop := stopsignal.Context(os.Stderr, exitCancelled)
	code := runApp(ctx, &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		interactive: termui.IsTerminal(os.Stdin), stderrTerminal: termui.IsTerminal(os.Stderr), aborts: aborts}, os.Args[1:])
	stop()
	stopProfiling()
	os.Exit(code)
}

// run is main without the process: tests call it with their own context,
// arguments and streams, and read the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runApp(ctx, &app{stdin: stdin, stdout: stdout, stderr: stderr,
		interactive: termui.IsTerminal(stdin), stderrTerminal: termui.IsTerminal(stderr)}, args)
}

// runApp runs one command line with a's streams and says how it ended.
func runApp(ctx context.Context, a *app, args []string) int {
	return execute(ctx, a, newRootCommand(a), args)
}

// execute runs one command line of root with a's streams and says how it
// ended: an error is reported (an error event under --json) and its exit
// code returned.
func execute(ctx context.Context, a *app, root *cobra.Command, args []string) (code int) {
	// A bug must not exit 2, which scripts read as their own mistake: it
	// is an internal error (1), reported as one, with where it happened.
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("internal error: %v (please report it, with this:)\n%s", r, debug.Stack())
			termui.New(a.stdout, a.stderr, termui.Options{JSON: jsonRequested(nil, args)}).Fail(newErrorEvent(err, exitInternal))
			code = exitInternal
		}
	}()
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	err = inFlagWords(err)
	code = exitCode(err)
	if !errorAlreadyReported(err) {
		// Under --json every failure is an error event on stdout, even
		// one found before the command ran (a bad flag or target).
		termui.New(a.stdout, a.stderr, termui.Options{JSON: jsonRequested(c, args)}).Fail(newErrorEvent(err, code))
	}
	return code
}
