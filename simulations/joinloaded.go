package simulations

// join-loaded: a node joins a cluster that holds a large registry, under
// churn. Too heavy for the 20-seed sweep (its own make target,
// chaos-join).

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/node"
)

// joinLoadedScenario is the scenario RunJoinLoaded runs with size bulk
// instances.
func joinLoadedScenario(size int) Scenario {
	return Scenario{
		Name: "join-loaded",
		Summary: fmt.Sprintf("A node joins a 3-node cluster holding %d instances (with hour-long leases, in applications no client uses) "+
			"while clients churn: it must get ready, agree with the others, and no registration may be lost.", size),
		Invariants:      []string{InvNoMissingRenewer, InvConvergence, InvNoResurrection, InvMembership},
		DefaultDuration: 15 * time.Second,
		ShortDuration:   10 * time.Second,
		Drive:           func(s *Sim) error { return driveJoinLoaded(s, size) },
	}
}

// RunJoinLoaded runs join-loaded with size bulk instances on a cluster of
// four node names (the fourth joins during the run). cfg's Nodes is
// ignored; the probes are slowed to one a second (a fingerprint of a large
// registry is costly).
func RunJoinLoaded(ctx context.Context, cfg Config, size int) (*Result, error) {
	if size < 1 {
		return nil, fmt.Errorf("%w: join-loaded: size %d must be positive", ErrInvalidConfig, size)
	}
	cfg.Nodes = 4
	cfg.Timers.ProbeInterval = time.Second
	// The initial sync of a large registry takes longer than the default,
	// and the joiner agrees with the others once it holds the registry:
	// both are judged by the goals' bound for a node joining a cluster of
	// 1M instances (ready within 30 s), not by the chaos sweep's 10 s for
	// small registries.
	cfg.Timers.ReadyTimeout = 30 * time.Second
	cfg.Thresholds.Convergence = cfg.Timers.ReadyTimeout
	return Run(ctx, joinLoadedScenario(size), cfg)
}

// bulkPerApp is how many bulk instances share an application.
const bulkPerApp = 100

// driveJoinLoaded: n3 is taken down before anything happens; n0 gets size
// bulk instances, which replicate to n1 and n2; steady clients and churn
// start next to n0–n2; n3 starts as a fresh process and joins.
func driveJoinLoaded(s *Sim, size int) error {
	s.fingerprint = clientAppsFingerprint(s)
	names := s.Cluster().Names()
	joiner, members := names[len(names)-1], names[:len(names)-1]
	if err := s.Crash(joiner, "(taken down before the load, to join later)"); err != nil {
		return err
	}
	start := time.Now()
	if err := s.loadBulk(members[0], size); err != nil {
		return err
	}
	s.Event("load", "%d bulk instances registered on %s in %v", size, members[0], time.Since(start).Round(time.Millisecond))
	limit := time.Now().Add(60 * time.Second)
	for {
		done := true
		for _, n := range members {
			if nd := s.Cluster().Node(n); nd == nil || nd.Registry().Count() < size {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(limit) {
			return fmt.Errorf("simulations: the bulk instances did not reach every member within 60s")
		}
		if err := s.Sleep(100 * time.Millisecond); err != nil {
			return err
		}
	}
	s.Event("replicated", "every member holds the %d bulk instances, %v after the load began", size, time.Since(start).Round(time.Millisecond))
	var steady []*Client
	k := s.IntN(len(Apps))
	for range 3 {
		for _, loc := range members {
			steady = append(steady, s.NewClient(Apps[k%len(Apps)], loc))
			k++
		}
	}
	if err := s.WaitRegistered(steady, registerWithin); err != nil {
		return err
	}
	s.Event("clients", "%d steady clients registered", len(steady))
	spec := standardChurn(400 * time.Millisecond)
	spec.Locations = members
	s.StartChurn(spec)
	if err := s.Sleep(2 * time.Second); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
	defer cancel()
	if err := s.Restart(ctx, joiner); err != nil {
		return err
	}
	return s.Sleep(s.Duration())
}

// loadBulk registers size instances with hour-long leases directly in
// name's registry, bulkPerApp to an application named BULK-nnnn (small
// applications: a write re-encodes its application's documents).
func (s *Sim) loadBulk(name string, size int) error {
	nd := s.Cluster().Node(name)
	if nd == nil {
		return fmt.Errorf("simulations: load %s: not running", name)
	}
	reg := nd.Registry()
	workers := max(2, runtime.GOMAXPROCS(0))
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < size; i += workers {
				app := fmt.Sprintf("BULK-%04d", i/bulkPerApp)
				id := fmt.Sprintf("bulk-%06d", i)
				body := fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.sim","app":%q,"ipAddr":"10.9.%d.%d",`+
					`"status":"UP","port":{"$":8080,"@enabled":"true"},"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
					`"leaseInfo":{"durationInSecs":3600,"renewalIntervalInSecs":30},"lastDirtyTimestamp":"%d"}}`,
					id, id, app, (i/250)%250, i%250+1, time.Now().UnixMilli())
				inst, err := eureka.DecodeInstance("application/json", []byte(body))
				if err != nil {
					errs <- err
					return
				}
				inst.Normalize()
				if err := reg.Register(s.ctx, inst, false); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// clientAppsFingerprint is Fingerprint restricted to the clients'
// applications, plus the registry's hashcode (instances per status, over
// every application, the bulk ones included): two nodes that differ in the
// bulk applications by anything but a status change still differ.
func clientAppsFingerprint(s *Sim) func(*node.Node) string {
	return func(nd *node.Node) string {
		snap := nd.View().Snapshot()
		var b strings.Builder
		b.WriteString(snap.HashCode())
		for _, name := range s.appNames() {
			a := snap.App(name)
			if a == nil {
				continue
			}
			vs := a.Versions()
			for j, in := range a.Instances() {
				fmt.Fprintf(&b, "|%s/%s@%d.%s", a.Name(), in.ID(), vs[j].Clock, vs[j].Node)
			}
		}
		return b.String()
	}
}
