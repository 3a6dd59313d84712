package simulations

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// Progress reports a batch of runs as it goes. On a terminal it keeps one
// status line rewritten in place ("\r"): runs done of the total, passes
// and failures so far, the elapsed time and, per run under way, its
// scenario, seed, time into it and latest timeline event; a finished run
// that failed also gets a line of its own above it. Elsewhere (a CI log, a
// file) it writes one line per finished run and nothing else. Its methods
// are safe for concurrent use; Close stops the redrawing.
type Progress struct {
	w        io.Writer
	terminal bool
	width    int
	total    int
	start    time.Time

	mu      sync.Mutex
	running map[runKey]*runState
	done    int
	passed  int
	failed  int
	drawn   bool // a status line is on the screen
	closed  bool
	stop    chan struct{}
	stopped sync.WaitGroup
}

type runKey struct {
	scenario string
	seed     int64
}

type runState struct {
	started time.Time
	last    Event
}

// ProgressRedraw is how often a terminal's status line is redrawn without
// an event (to move the elapsed time on).
const ProgressRedraw = 500 * time.Millisecond

// NewProgress returns a Progress for total runs writing to w, in terminal
// mode when w is a terminal (IsTerminal).
func NewProgress(w io.Writer, total int) *Progress {
	return newProgress(w, total, IsTerminal(w))
}

// NewProgressMode is NewProgress with the mode chosen by the caller (the
// tests; a flag forcing one).
func NewProgressMode(w io.Writer, total int, terminal bool) *Progress {
	return newProgress(w, total, terminal)
}

func newProgress(w io.Writer, total int, terminal bool) *Progress {
	p := &Progress{w: w, terminal: terminal, width: 120, total: total, start: time.Now(),
		running: map[runKey]*runState{}, stop: make(chan struct{})}
	if f, ok := w.(*os.File); ok && terminal {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			p.width = cols
		}
	}
	if terminal {
		p.stopped.Add(1)
		go p.redraw()
	}
	return p
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *Progress) redraw() {
	defer p.stopped.Done()
	t := time.NewTicker(ProgressRedraw)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.drawLocked()
			p.mu.Unlock()
		}
	}
}

// Started notes that the run of scenario with seed began.
func (p *Progress) Started(scenario string, seed int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[runKey{scenario, seed}] = &runState{started: time.Now()}
	p.drawLocked()
}

// Event notes a timeline event of a run under way; Config.Progress can
// call it.
func (p *Progress) Event(scenario string, seed int64, ev Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := runKey{scenario, seed}
	st := p.running[k]
	if st == nil {
		st = &runState{started: time.Now().Add(-ev.At)}
		p.running[k] = st
	}
	st.last = ev
	p.drawLocked()
}

// Finished notes that the run r ended: one line for it (on a terminal
// only when it failed), then the status line again.
func (p *Progress) Finished(r *Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, runKey{r.Scenario, r.Seed})
	p.done++
	if r.Pass {
		p.passed++
	} else {
		p.failed++
	}
	line := fmt.Sprintf("[%d/%d] %-24s seed %-3d %6.1fs  %s  (%d passed, %d failed, elapsed %v)",
		p.done, p.total, r.Scenario, r.Seed, r.Wall.Seconds(), VerdictLine(r), p.passed, p.failed,
		time.Since(p.start).Round(time.Second))
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	if !r.Pass {
		p.clearLocked()
		fmt.Fprintln(p.w, line)
	}
	p.drawLocked()
}

// Close stops the redrawing and ends the status line; the Progress must
// not be used after.
func (p *Progress) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
	p.mu.Unlock()
	p.stopped.Wait()
}

// clearLocked erases the status line.
func (p *Progress) clearLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// drawLocked rewrites the status line in place (terminal mode only).
func (p *Progress) drawLocked() {
	if !p.terminal || p.closed {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d done, %d passed, %d failed, %v", p.done, p.total, p.passed, p.failed,
		time.Since(p.start).Round(time.Second))
	keys := make([]runKey, 0, len(p.running))
	for k := range p.running {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runKey) int {
		if c := strings.Compare(a.scenario, b.scenario); c != 0 {
			return c
		}
		return int(a.seed - b.seed)
	})
	for _, k := range keys {
		st := p.running[k]
		fmt.Fprintf(&b, " | %s#%d +%.0fs", k.scenario, k.seed, time.Since(st.started).Seconds())
		if st.last.Kind != "" {
			fmt.Fprintf(&b, " %s", st.last.Kind)
		}
	}
	line := b.String()
	if r := []rune(line); len(r) > p.width-1 {
		line = string(r[:p.width-2]) + "…"
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.drawn = true
}
