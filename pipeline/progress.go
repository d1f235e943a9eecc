package pipeline

import "time"

// Phase is the part of a run a Progress reports on.
type Phase string

// Phases reported in Progress.Phase.
const (
	PhaseWrite  Phase = "write"
	PhaseSync   Phase = "sync"
	PhaseVerify Phase = "verify"
)

// progressInterval caps how often Progress is called within a phase: often
// enough for a smooth bar, rare enough to cost nothing on the hot path.
const progressInterval = 250 * time.Millisecond

// Progress is a snapshot handed to the caller's callback.
type Progress struct {
	Phase   Phase         // PhaseWrite, PhaseSync, PhaseVerify or PhaseRead
	Done    int64         // image bytes done in this phase
	Total   int64         // image bytes in this phase; -1 when unknown
	Elapsed time.Duration // since the phase started
	Rate    float64       // bytes per second averaged over the phase
}

// progress throttles calls to a callback. A nil callback makes every method
// a no-op, so the hot path calls it unconditionally.
type progress struct {
	fn    func(Progress)
	phase Phase
	total int64
	start time.Time
	last  time.Time
}

// begin starts a phase and always reports it.
func (p *progress) begin(phase Phase, total, done int64) {
	if p.fn == nil {
		return
	}
	p.phase, p.total = phase, total
	p.start = time.Now()
	p.emit(done, p.start)
}

// update reports done if the last report is at least progressInterval old,
// or unconditionally when force is set (the end of a phase).
func (p *progress) update(done int64, force bool) {
	if p.fn == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.last) < progressInterval {
		return
	}
	p.emit(done, now)
}

func (p *progress) emit(done int64, now time.Time) {
	p.last = now
	el := now.Sub(p.start)
	var rate float64
	if el > 0 {
		rate = float64(done) / el.Seconds()
	}
	p.fn(Progress{Phase: p.phase, Done: done, Total: p.total, Elapsed: el, Rate: rate})
}
