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
	"syscall"
)

func main() {
	ctx, stop := signalContext(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it with their own context,
// arguments and streams, and read the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runApp(ctx, &app{stdin: stdin, stdout: stdout, stderr: stderr, interactive: isTerminalReader(stdin)}, args)
}

// runApp runs one command line with a's streams and says how it ended.
func runApp(ctx context.Context, a *app, args []string) int {
	root := newRootCommand(a)
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	stderr := a.stderr
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if !errorAlreadyReported(err) {
		fmt.Fprintf(stderr, "usbflash: %v\n", err)
	}
	return code
}

// signalContext cancels on the first Ctrl-C (or SIGTERM) so a write can
// finish the command in flight, sync and report how far it got; a second
// signal exits at once.
func signalContext(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "\nusbflash: stopping after the command in flight (Ctrl-C again to abort at once)")
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
