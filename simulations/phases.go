package simulations

// The phases of a scenario run that both harnesses share, the in-process
// one (Sim) and the one of real processes (simulations/netns): the churn
// of short-lived clients, which lasts until the faults are over, and the
// end of the faults, from which the checkers measure settling.

import (
	"sync"
	"time"
)

// Phases tracks a run's churn and faults. The zero value is ready to use;
// it is safe for concurrent use.
type Phases struct {
	mu        sync.Mutex
	faulted   bool      // a fault was injected
	lastLift  time.Time // when a fault was last lifted
	quiet     bool      // the faults are over
	churnStop chan struct{}
	churnWG   sync.WaitGroup
}

// Fault notes that the scenario injected a fault.
func (p *Phases) Fault() {
	p.mu.Lock()
	p.faulted = true
	p.mu.Unlock()
}

// Lifted notes that a fault was just lifted.
func (p *Phases) Lifted() {
	p.mu.Lock()
	p.lastLift = time.Now()
	p.mu.Unlock()
}

// Churn starts a client after each of wait's intervals until StopChurn:
// spawn starts one and returns how long it lives and what ends its life.
// A client still alive at StopChurn keeps running; its harness stops it
// at the teardown.
func (p *Phases) Churn(wait func() time.Duration, spawn func() (life time.Duration, end func())) {
	stop := make(chan struct{})
	p.mu.Lock()
	p.churnStop = stop
	p.mu.Unlock()
	p.churnWG.Add(1)
	go func() {
		defer p.churnWG.Done()
		for {
			t := time.NewTimer(wait())
			select {
			case <-stop:
				t.Stop()
				return
			case <-t.C:
			}
			life, end := spawn()
			p.churnWG.Add(1)
			go func() {
				defer p.churnWG.Done()
				lt := time.NewTimer(life)
				defer lt.Stop()
				select {
				case <-stop:
				case <-lt.C:
					end()
				}
			}()
		}
	}()
}

// StopChurn stops starting clients and waits for the churn's goroutines.
func (p *Phases) StopChurn() {
	p.mu.Lock()
	stop := p.churnStop
	p.churnStop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		p.churnWG.Wait()
	}
}

// FaultsOver stops the churn and returns the mark of the end of the
// faults, for the recorder: the quiet phase starts now, once the churn has
// stopped, and the faults end when the last one was lifted (now if none
// was; never in a run without faults). It returns nil when the faults were
// already over.
func (p *Phases) FaultsOver() func(*Observations) {
	p.mu.Lock()
	if p.quiet {
		p.mu.Unlock()
		return nil
	}
	p.quiet = true
	faulted, lift := p.faulted, p.lastLift
	p.mu.Unlock()
	p.StopChurn()
	now := time.Now()
	if lift.IsZero() {
		lift = now
	}
	return func(o *Observations) {
		o.QuietStart = now
		if faulted {
			o.FaultsEnd = lift
		}
	}
}
