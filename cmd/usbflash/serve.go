package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/usbflash/usbflash/internal/drive"
	"github.com/usbflash/usbflash/internal/image"
	"github.com/usbflash/usbflash/internal/image/catalog"
	"github.com/usbflash/usbflash/internal/image/httpsrc"
	"github.com/usbflash/usbflash/internal/ui/web"
	"github.com/usbflash/usbflash/pipeline"
)

// serveFlags are the options of `usbflash serve`: where it listens, and
// the settings of the sessions its page starts that belong to the
// machine rather than to one write.
type serveFlags struct {
	listen, verifyHash               string
	open                             bool
	catalog                          catalogFlags
	cache, cacheSize                 string
	report, logDir                   string
	station, operator                string
	sha256Keyring, sha256Fingerprint string
	stopTimeout                      time.Duration
}

// serveOptions is what a serve command line asks for: where the page is
// served, and the settings of the sessions it starts (serveFlags, their
// flags) and the readers they see.
type serveOptions struct {
	serveFlags
	Readers *drive.Readers
}

// defaultListen is loopback, on a port the system picks: only this
// machine reaches the page.
const defaultListen = "127.0.0.1:0"

func newServeCommand(a *app, runF func(*serveOptions) error) *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a page to write cards from a browser: one card, several, or a station",
		Long: `Serve a local web page that shows the readers and their slots, writes an
image (a file on this machine, a URL, an entry of an OS list, or a file
dropped on the page, streamed as it is written) to the cards chosen, with
first-boot settings, verifies, checks and benches them, and runs a station
(write --watch). Every session runs as the command line runs it, and the
page shows its --json events; writing asks the question the terminal asks,
and the page's answer names every card.

It listens on loopback only unless --listen names another address, and
prints the address to open, which carries a token: every request that
changes anything must carry it, come from the page itself (Origin) and
name this server (Host), or it is refused. Closing the page stops
nothing; its Stop button stops a session as one SIGTERM stops a command.
Ctrl-C stops the server and every session, after the command in flight.

With --readers sim:DIR the page shows (and writes) that directory's
simulated readers instead of USB's: the page without hardware.`,
		Args:              exactArgs(0, "no arguments"),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(c *cobra.Command, _ []string) error {
			readers, err := a.newReaders()
			if err != nil {
				return err
			}
			o := &serveOptions{serveFlags: f, Readers: readers}
			return runOr(c.Context(), runF, o, a.serveRun)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.listen, "listen", defaultListen, "the address to serve the page on (loopback unless given: another address lets the network in, with the token)")
	fl.BoolVar(&f.open, "open", false, "open the page in this desktop's browser")
	f.catalog.register(c, false)
	fl.StringVar(&f.cache, "cache", "", "keep images read from a URL in this directory (as write --cache)")
	fl.StringVar(&f.cacheSize, "cache-size", "0", "with --cache: at most this much in the directory (as write --cache-size)")
	fl.StringVar(&f.report, "report", "", "a station's record of every card, in this .json or .csv file (as write --report)")
	fl.StringVar(&f.logDir, "log-dir", "", "keep one log per reader slot in this directory (as write --log-dir)")
	fl.StringVar(&f.station, "station", "", "a label for every card's record: this station's name")
	fl.StringVar(&f.operator, "operator", "", "a label for every card's record: who runs the station")
	fl.StringVar(&f.sha256Keyring, "sha256-keyring", "", "the publisher's OpenPGP public keys: the checksum list beside an image must be signed by one of them (as write --sha256-keyring)")
	fl.StringVar(&f.sha256Fingerprint, "sha256-fingerprint", "", "with --sha256-keyring: only the key with this fingerprint signs")
	fl.StringVar(&f.verifyHash, "verify-hash", pipeline.MethodDigests.String(), "how the read-back is checked: xxh3 or sha256 (as write --verify-hash)")
	fl.DurationVar(&f.stopTimeout, "stop-timeout", 0, "a station's Stop lets the cards being written finish for up to this long (as write --stop-timeout)")
	return c
}

// serveRun serves the page until ctx ends, then stops every session and
// waits for them.
func (a *app) serveRun(ctx context.Context, o *serveOptions) error {
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return &usageError{fmt.Sprintf("--listen %s: %v", o.listen, err)}
	}
	tmp, err := os.MkdirTemp("", "usbflash-serve-")
	if err != nil {
		ln.Close()
		return fmt.Errorf("a directory for the page's files: %w", err)
	}
	defer os.RemoveAll(tmp)
	host, _, _ := net.SplitHostPort(o.listen)
	opts := web.Options{Token: web.NewToken(), Hosts: []string{host}, Version: buildVersion(),
		Slots: a.serveSlots, Run: a.serveJob(o.serveFlags, tmp)}
	if o.catalog.catalog != "" {
		opts.Catalog = func(ctx context.Context) ([]catalog.Entry, error) {
			return image.LoadCatalog(ctx, o.catalog.catalog, httpsrc.Options{})
		}
	}
	srv, err := web.New(opts)
	if err != nil {
		ln.Close()
		return err
	}
	addr := ln.Addr().(*net.TCPAddr)
	url := web.PageURL(o.listen, addr, opts.Token)
	fmt.Fprintf(a.stdout, "usbflash serve: open %s\n", url)
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(a.stdout, "usbflash serve: the page is open to the network; requests that change anything need the token %s, which travels unencrypted: use it on a network you trust\n", opts.Token)
	}
	if o.open {
		if err := web.OpenBrowser(url); err != nil {
			fmt.Fprintf(a.stderr, "usbflash serve: %v: open the address above in a browser\n", err)
		}
	}
	return srv.Serve(ctx, ln, func() {
		fmt.Fprintln(a.stderr, "usbflash serve: stopping every session after the command in flight")
	})
}

// serveSlots lists the slots as list describes them: the USB readers (or
// --readers' simulated ones), then the disks disk: writes; the error
// says what could not be listed.
func (a *app) serveSlots(ctx context.Context) ([]web.Slot, error) {
	readers, err := a.newReaders()
	if err != nil {
		return nil, err
	}
	l, _, err := a.survey(ctx, readers)
	notes := l.Notes
	switch {
	case err != nil:
		notes = append([]string{factsAndAdvice(err)}, notes...)
	case l.NoUSB != "":
		notes = append([]string{"No USB readers: " + l.NoUSB}, notes...)
	}
	slots := append(web.SlotsOfReaders(l.Readers), web.SlotsOfDisks(l.Disks)...)
	if len(notes) > 0 {
		return slots, errors.New(strings.Join(notes, "; "))
	}
	return slots, nil
}

// serveJob runs each request of the page as the command line runs it:
// its flags are the page's choices and serve's settings, its output the
// --json events, its question the page's.
func (a *app) serveJob(f serveFlags, tmp string) func(context.Context, *web.Job, web.Request) {
	return func(ctx context.Context, job *web.Job, req web.Request) {
		ja := &app{stdin: strings.NewReader(""), stdout: job, stderr: a.stderr, aborts: a.aborts, listUSB: a.listUSB,
			listDisks: a.listDisks, watchFinder: a.watchFinder, ask: job.Confirm, perCard: true, customBase: req.Customize}
		if stdin := job.Stdin(); stdin != nil {
			ja.stdin = stdin
		}
		plot := filepath.Join(tmp, fmt.Sprintf("bench-%d.svg", job.ID))
		runApp(ctx, ja, a.serveArgs(f, req, plot))
		if _, err := os.Stat(plot); err == nil {
			job.AddFile("plot.svg", plot)
		}
	}
}

// serveArgs is the command line of a request: the page's choices as the
// flags that give them, serve's settings, then the arguments.
func (a *app) serveArgs(f serveFlags, req web.Request, plot string) []string {
	args := []string{req.Kind, "--json", "--quirks=" + a.quirks, "--transport=" + a.transport, "--queue-depth=" + strconv.Itoa(a.queueDepth),
		"--ca-cert=" + a.caCert, "--readers=" + a.readers}
	add := func(flag, value string) {
		if value != "" {
			args = append(args, flag+"="+value)
		}
	}
	var image []string
	img := req.Image
	switch {
	case img.OS != "":
		add("--os", img.OS)
	case img.Stream != nil:
		image = []string{"-"}
	case img.Path != "":
		image = []string{img.Path}
	case img.URL != "":
		image = []string{img.URL}
	}
	switch req.Kind {
	case web.KindWrite, web.KindStation:
		args[0] = "write"
		add("--catalog", f.catalog.catalog)
		add("--sha256", img.SHA256)
		add("--cache", f.cache)
		add("--cache-size", f.cacheSize)
		add("--log-dir", f.logDir)
		add("--station", f.station)
		add("--operator", f.operator)
		add("--sha256-keyring", f.sha256Keyring)
		add("--sha256-fingerprint", f.sha256Fingerprint)
		if req.NoVerify {
			args = append(args, "--no-verify")
		} else {
			add("--verify-hash", f.verifyHash)
		}
		if req.Eject {
			args = append(args, "--eject")
		}
		if req.Check {
			args = append(args, "--check")
		}
		if req.Kind == web.KindStation {
			// The page's confirmation is the explicit choice --yes is.
			args = append(args, "--watch", "--yes")
			add("--report", f.report)
			if f.stopTimeout > 0 {
				add("--stop-timeout", f.stopTimeout.String())
			}
		}
	case web.KindVerify:
		add("--catalog", f.catalog.catalog)
	case web.KindBench:
		add("--plot", plot)
	}
	args = append(args, "--")
	args = append(args, image...)
	return append(args, req.Targets...)
}
