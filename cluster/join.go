package cluster

// Joining: seeds resolved on every attempt and joined in the background
// with backoff and jitter until one answers.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// joinLoop joins the seeds, retrying with backoff until one answers, there
// is nothing to join, ctx is done or the membership shuts down.
func (m *Membership) joinLoop(ctx context.Context) {
	defer m.wg.Done()
	if len(m.cfg.Join) == 0 {
		m.join.set(JoinStatus{State: JoinAlone, Reason: "no seeds configured: alone until another node joins this one"})
		m.markJoined("no seeds configured")
		return
	}
	delay := m.cfg.JoinRetryMin
	for attempt := 1; ; attempt++ {
		m.mu.Lock()
		left := m.left
		m.mu.Unlock()
		if left {
			return // Leave before the first join: nothing to join any more
		}
		addrs, complete, err := m.resolveSeeds(ctx)
		if len(addrs) == 0 && complete {
			m.join.set(JoinStatus{State: JoinAlone, Attempts: attempt,
				Reason: "every seed is this node: alone until another node joins this one"})
			m.markJoined("every seed is this node")
			return
		}
		started := time.Now()
		if len(addrs) > 0 {
			n, jerr := m.ml.Join(addrs)
			if n > 0 {
				m.join.set(JoinStatus{State: JoinJoined, Attempts: attempt,
					Reason: fmt.Sprintf("joined through %d of %d seeds", n, len(addrs))})
				m.log.Info("cluster: joined", "seeds_answered", n, "seeds_tried", len(addrs), "attempt", attempt)
				if m.predecessor.Load() && !sabotage.On(sabotage.RejoinBelowLeftIncarnation) {
					m.announceRestart()
				}
				m.markJoined("")
				return
			}
			err = errors.Join(err, jerr)
		}
		m.joinFailures.Add(1)
		wait := jitter(delay)
		st := m.noteJoinAttempt(attempt, started, addrs, err)
		if st.State == JoinRefused {
			// A misconfiguration: one clear line per attempt, whatever
			// memberlist logged about it.
			m.log.Error("cluster: join refused, will retry; this node stays unready until it joins",
				"attempt", attempt, "cause", string(st.Cause), "reason", st.Reason, "protocol", m.version,
				"retry_in", wait.Round(time.Millisecond))
		} else {
			level := slog.LevelInfo
			if attempt == 1 || attempt%10 == 0 {
				level = slog.LevelWarn
			}
			m.log.Log(context.Background(), level, "cluster: join failed, will retry",
				"attempt", attempt, "seeds", addrs, "retry_in", wait.Round(time.Millisecond), "err", ErrorText(err))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			m.log.Warn("cluster: gave up joining", "err", ctx.Err())
			return
		case <-m.stop:
			t.Stop()
			return
		}
		delay = min(2*delay, m.cfg.JoinRetryMax)
	}
}

// announceRestart pushes this node's state to every live member (a
// push/pull each, as a join does), after a join that found a previous
// process of this node listed.
//
// A fresh process starts at memberlist's first incarnation. Its
// predecessor's leave raised the predecessor's incarnation (the leaving
// flag's update, then the leave message), and memberlist ignores an alive
// message whose incarnation is not above the one it holds, so the members
// ignore the fresh process's alive. The first seed's push/pull lists the
// predecessor; memberlist refutes it at once with a higher incarnation, and
// the seeds joined after that one take it from the join's push/pull. The
// others, the first seed included, had only gossip to learn it from, which
// reaches every member with high probability only: members that missed it
// did not see the node for a whole push/pull interval (BUG-9 of the
// simulations: 10–22 s). Pushing the refuted state to every member makes
// it certain.
func (m *Membership) announceRestart() {
	m.mu.Lock()
	var addrs []string
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State.Live() {
			addrs = append(addrs, net.JoinHostPort(mem.node.Addr.String(), strconv.Itoa(int(mem.node.Port))))
		}
	}
	m.mu.Unlock()
	if len(addrs) == 0 {
		return
	}
	n, err := m.ml.Join(addrs)
	m.log.Info("cluster: a previous process of this node was listed; told every member this one is alive",
		"members", len(addrs), "answered", n, "err", ErrorText(err))
}

// jitter returns a random duration in [d/2, d] ("equal jitter"), so nodes
// started together do not retry in lockstep.
func jitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(d-half+1)
}

// markJoined closes Joined once; reason, if any, is logged.
func (m *Membership) markJoined(reason string) {
	m.joinOnce.Do(func() {
		if reason != "" {
			m.log.Info("cluster: nothing to join", "reason", reason)
		}
		close(m.joined)
	})
}

// resolveSeeds returns the "ip:port" addresses of the seeds other than this
// node, and whether every seed resolved.
func (m *Membership) resolveSeeds(ctx context.Context) (addrs []string, complete bool, err error) {
	complete = true
	seen := make(map[string]bool)
	add := func(ip net.IP, port int) {
		if m.isSelf(ip, port) {
			return
		}
		a := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, seed := range m.cfg.Join {
		host, port, _ := splitJoinAddr(seed) // checked by Validate
		if ip := net.ParseIP(host); ip != nil {
			add(ip, port)
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		names, lerr := m.resolver(lctx, host)
		cancel()
		if lerr != nil {
			complete = false
			err = errors.Join(err, fmt.Errorf("resolve %s: %w", host, lerr))
			continue
		}
		for _, name := range names {
			h, p := name, port
			if hh, ps, e := net.SplitHostPort(name); e == nil {
				if pp, e := strconv.Atoi(ps); e == nil {
					h, p = hh, pp
				}
			}
			ip := net.ParseIP(h)
			if ip == nil {
				complete = false
				err = errors.Join(err, fmt.Errorf("resolve %s: %q is not an IP address", host, name))
				continue
			}
			add(ip, p)
		}
	}
	return addrs, complete, err
}

// isSelf reports whether ip:port reaches this node.
func (m *Membership) isSelf(ip net.IP, port int) bool {
	// Not m.ml.LocalNode(): it returns a pointer into memberlist's state,
	// which memberlist rewrites under its lock (UpdateNode, refutes), so
	// reading it races. The copy in m.members was taken under that lock.
	m.mu.Lock()
	self := m.members[m.cfg.NodeName]
	m.mu.Unlock()
	if self == nil || port != int(self.node.Port) {
		return false
	}
	if ip.Equal(self.node.Addr) {
		return true
	}
	// Bound to every interface: loopback and "any" reach us too.
	bind := net.ParseIP(m.cfg.BindAddr)
	return m.cfg.Transport == nil && bind != nil && bind.IsUnspecified() && (ip.IsLoopback() || ip.IsUnspecified())
}
