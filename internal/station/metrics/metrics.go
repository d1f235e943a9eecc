// Package metrics exports what write sessions do as Prometheus metrics: a
// flashing station is then watched by the monitoring a fleet already has
// (one Prometheus for every station), not by a tool of ours. A Station is
// a session.Observer: it counts the session's events, and decides nothing
// the session did not already say (a card's result is its
// session.Outcome.Result).
//
// The names follow Prometheus's rules: the usbflash_ prefix, base units
// (bytes, seconds), _total counters, a usbflash_build_info, and no
// per-card values (serial numbers) as labels, which would make a new time
// series for every card a station ever writes.
package metrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/usbflash/usbflash/internal/failure"
	"github.com/usbflash/usbflash/internal/observe"
	"github.com/usbflash/usbflash/internal/session"
)

// Options are a Station's settings.
type Options struct {
	// Version is the build's version, a label of usbflash_build_info.
	Version string
	// Textfile, when set, is rewritten after every card and at Close, for
	// node_exporter's textfile collector: atomically (a temporary file
	// renamed), so the collector never reads half of it.
	Textfile string
	// Station, when set, is the station label of every usbflash_ metric:
	// stations sharing one node_exporter (a textfile each) stay apart.
	Station string
}

// Station counts a flash session's events.
type Station struct {
	opts Options
	reg  *prometheus.Registry // usbflash_ metrics: /metrics and the textfile
	run  *prometheus.Registry // the process's and Go's: /metrics only

	cardsStarted   prometheus.Counter
	cardsFinished  *prometheus.CounterVec
	bytesWritten   prometheus.Counter
	bytesVerified  prometheus.Counter
	writeSeconds   prometheus.Histogram
	verifySeconds  prometheus.Histogram
	readers        prometheus.Gauge
	inFlight       prometheus.Gauge
	verifyFailures prometheus.Counter
	recoveries     *prometheus.CounterVec
	transferCaps   prometheus.Counter
	repairedRanges prometheus.Counter
	repairedBytes  prometheus.Counter

	mu   sync.Mutex
	open map[string]bool // cards opened and not done, by name
}

// durationBuckets are the seconds a card's write or verify takes: a few
// seconds for a small image on a fast card to over an hour for a large
// one on a slow reader.
var durationBuckets = prometheus.ExponentialBuckets(1, 2, 13) // 1 s .. 4096 s

// ResultLabels are the values of usbflash_cards_finished_total's result
// label: session.ResultOK, session.ResultRemoved and every failure class.
func ResultLabels() []string {
	out := []string{session.ResultOK, session.ResultRemoved}
	for c := failure.Usage; c <= failure.Interrupted; c++ {
		out = append(out, c.String())
	}
	return out
}

// StepLabels are the values of usbflash_reader_recoveries_total's step
// label.
func StepLabels() []string {
	var out []string
	for _, s := range observe.RecoverySteps() {
		out = append(out, string(s))
	}
	return out
}

// New makes a Station whose metrics are all present from the start (a
// counter at 0 is a fact a dashboard can show, a missing one is not).
func New(opts Options) *Station {
	s := &Station{opts: opts, reg: prometheus.NewRegistry(), run: prometheus.NewRegistry(), open: map[string]bool{}}
	var labels prometheus.Labels
	if opts.Station != "" {
		labels = prometheus.Labels{"station": opts.Station}
	}
	f := factory{reg: s.reg, labels: labels}
	s.cardsStarted = f.counter("usbflash_cards_started_total", "Cards a session took on: opened, or refused as they were found.")
	s.cardsFinished = f.counterVec("usbflash_cards_finished_total", "Cards done, by result: ok, removed (the card or its reader went away), or the failure's class.", "result")
	s.bytesWritten = f.counter("usbflash_written_bytes_total", "Image bytes written to cards.")
	s.bytesVerified = f.counter("usbflash_verified_bytes_total", "Image bytes read back from cards and found to match.")
	s.writeSeconds = f.histogram("usbflash_write_duration_seconds", "Time a card's write took, sync included, for cards written in full.")
	s.verifySeconds = f.histogram("usbflash_verify_duration_seconds", "Time a card's read-back took, for cards that matched.")
	s.readers = f.gauge("usbflash_readers", "Card readers a station holds open.")
	s.inFlight = f.gauge("usbflash_cards_in_flight", "Cards opened and not yet done.")
	s.verifyFailures = f.counter("usbflash_verify_failures_total", "Cards whose read-back differed from the image (after any repair).")
	s.recoveries = f.counterVec("usbflash_reader_recoveries_total", "Recovery steps taken on readers that failed a command, each followed by the command again, by step.", "step")
	s.transferCaps = f.counter("usbflash_transfer_size_lowered_total", "Readers that failed a large command and were sent smaller ones from then on.")
	s.repairedRanges = f.counter("usbflash_repaired_ranges_total", "Ranges of cards that read back different, were written again and then matched.")
	s.repairedBytes = f.counter("usbflash_repaired_bytes_total", "Bytes of the ranges repaired.")
	for _, r := range ResultLabels() {
		s.cardsFinished.WithLabelValues(r)
	}
	for _, st := range StepLabels() {
		s.recoveries.WithLabelValues(st)
	}
	info := register(f, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "usbflash_build_info",
		Help: "The build: its version and the Go version it was built with; always 1.", ConstLabels: labels}, []string{"version", "goversion"}))
	info.WithLabelValues(opts.Version, runtime.Version()).Set(1)
	// The process's memory, file descriptors and goroutines: what a week
	// of running would show growing. Not in the textfile, where
	// node_exporter's own process_ and go_ metrics would clash with them.
	s.run.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return s
}

// factory makes metrics with the station's constant labels.
type factory struct {
	reg    *prometheus.Registry
	labels prometheus.Labels
}

// register registers c and returns it.
func register[C prometheus.Collector](f factory, c C) C {
	f.reg.MustRegister(c)
	return c
}

func (f factory) counter(name, help string) prometheus.Counter {
	return register(f, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: f.labels}))
}

func (f factory) counterVec(name, help, label string) *prometheus.CounterVec {
	return register(f, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: f.labels}, []string{label}))
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	return register(f, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: f.labels}))
}

func (f factory) histogram(name, help string) prometheus.Histogram {
	return register(f, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: f.labels, Buckets: durationBuckets}))
}

// Observe counts one event of a session.
func (s *Station) Observe(e session.Event) {
	switch e := e.(type) {
	case session.Opened:
		s.mu.Lock()
		if !s.open[e.Card] {
			s.open[e.Card] = true
			s.cardsStarted.Inc()
			s.inFlight.Inc()
		}
		s.mu.Unlock()
	case session.Readers:
		s.readers.Set(float64(e.Present))
	case session.Note:
		if n := e.Notice; n != nil {
			switch n.Kind {
			case observe.NoticeRecovery:
				s.recoveries.WithLabelValues(string(n.Step)).Inc()
			case observe.NoticeTransferCap:
				s.transferCaps.Inc()
			}
		}
	case session.CardDone:
		s.cardDone(e.Outcome)
	}
}

func (s *Station) cardDone(o *session.Outcome) {
	s.mu.Lock()
	if s.open[o.Target] {
		delete(s.open, o.Target)
		s.inFlight.Dec()
	} else {
		s.cardsStarted.Inc() // refused before it opened: started and done at once
	}
	s.mu.Unlock()
	s.cardsFinished.WithLabelValues(o.Result()).Inc()
	s.bytesWritten.Add(float64(o.Written))
	if o.Err == nil && o.Write.Bytes > 0 && o.Written == o.Write.Bytes {
		s.writeSeconds.Observe(o.Write.Elapsed.Seconds())
	}
	if o.Verify != nil {
		s.bytesVerified.Add(float64(o.Verify.Bytes))
		s.verifySeconds.Observe(o.Verify.Elapsed.Seconds())
	}
	if o.Repair != nil {
		s.repairedRanges.Add(float64(o.Repair.Ranges))
		s.repairedBytes.Add(float64(o.Repair.Bytes))
	}
	if failure.Of(o.Err) == failure.Verify {
		s.verifyFailures.Inc()
	}
	if s.opts.Textfile != "" {
		// A failure here is said by Close, which writes it once more; a
		// station goes on writing cards meanwhile.
		_ = s.WriteTextfile(s.opts.Textfile)
	}
}

// Gatherer gives the usbflash_ metrics (what the textfile holds).
func (s *Station) Gatherer() prometheus.Gatherer { return s.reg }

// Handler serves /metrics: the usbflash_ metrics and the process's own
// (process_resident_memory_bytes, process_open_fds, go_goroutines).
func (s *Station) Handler() http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers{s.reg, s.run}, promhttp.HandlerOpts{})
}

// WriteTextfile writes the usbflash_ metrics to path in the text format,
// atomically: a temporary file beside it, renamed.
func (s *Station) WriteTextfile(path string) error {
	if err := prometheus.WriteToTextfile(path, s.reg); err != nil {
		return failure.Wrap(failure.Device, fmt.Errorf("metrics textfile %s: %w", path, err))
	}
	return nil
}

// Close writes the textfile a last time, if there is one, and says
// whether it could be kept.
func (s *Station) Close() error {
	if s.opts.Textfile == "" {
		return nil
	}
	return s.WriteTextfile(s.opts.Textfile)
}

// Server serves /metrics.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Serve listens on addr and serves /metrics until Close: the address is
// taken before Serve returns, so a port in use is said before the first
// card, not after it.
func (s *Station) Serve(addr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, failure.Wrap(failure.Usage, fmt.Errorf("metrics address %s: %w", addr, err))
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Handler())
	srv := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(srv.done)
		// It ends with ErrServerClosed at Close; any other end (the
		// listener failed) leaves the session going, unscraped.
		_ = srv.srv.Serve(ln)
	}()
	return srv, nil
}

// Addr is the address the server listens on (the port chosen for ":0").
func (v *Server) Addr() string { return v.ln.Addr().String() }

// Close stops serving: a scrape under way gets a short while to finish.
func (v *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := v.srv.Shutdown(ctx)
	<-v.done
	return err
}

// Setup is what a command asks of the metrics: an address to serve
// /metrics on, a textfile to keep, or neither.
type Setup struct {
	Listen, Textfile, Version, Station string
}

// Start makes the Station a command's settings ask for and starts serving
// it: nil and a stop that does nothing when they ask for none. stop ends
// the serving and writes the textfile a last time.
func Start(setup Setup) (obs session.Observer, stop func() error, err error) {
	if setup.Listen == "" && setup.Textfile == "" {
		return nil, func() error { return nil }, nil
	}
	st := New(Options{Version: setup.Version, Textfile: setup.Textfile, Station: setup.Station})
	if setup.Textfile != "" {
		// Written now, so a path that cannot be kept is said before the
		// first card, and a collector sees the station at 0 meanwhile.
		if err := st.WriteTextfile(setup.Textfile); err != nil {
			return nil, nil, failure.Wrap(failure.Usage, err)
		}
	}
	var srv *Server
	if setup.Listen != "" {
		if srv, err = st.Serve(setup.Listen); err != nil {
			return nil, nil, err
		}
	}
	return st, func() error {
		if srv != nil {
			srv.Close()
		}
		return st.Close()
	}, nil
}
