// Command wanbytes measures the bytes a region's follower receives over the
// WAN per change in the remote region, with 10,000 and 100,000 instances
// there: they should be flat, growing with what changes and not with the
// registry.
//
//	go run ./bench/cmd/wanbytes [-sizes 10000,100000] [-changes 100] [-modes stream,poll] [-bin heureka]
//		[-remote-bin heureka] [-follower-bin heureka]
//
// For each size and mode it starts two heureka processes on loopback: the
// remote, region dc2, loaded with that many instances through the HTTP API
// (leases of an hour: nothing expires during the run), and then the
// follower, region dc1, with --remote-region dc2 pointing at a TCP proxy in
// this process that forwards to the remote and counts the bytes of each
// direction (the WAN link). Once the follower holds the whole registry (the
// initial snapshot or full fetch) and 2 s have passed, it counts the bytes
// of an idle phase (10 s), then of -changes registrations in the remote
// region (one every 100 ms, new instances of an existing application) and
// of as many cancels of them, each phase ending when the follower's
// /admin/regions instance count shows the last change plus 2 s. Mode
// stream follows the remote's change stream (the default); mode poll runs
// with --region-stream=false and --region-pull-interval 1s, pulling
// deltas; the remote keeps its changes in its deltas for 10 s
// (--delta-retention; 3 minutes by default), so a poll carries each change
// about ten times. -remote-bin and -follower-bin run another binary (a
// previous release's) as the remote or the follower: a follower of a
// release before the compressed stream reads it plain, as does a follower
// of this one from such a remote, which measures the stream without
// compression and shows the two releases following each other. Every
// process it starts is stopped (SIGTERM, then SIGKILL) before it exits.
// The Markdown table goes to stdout, progress to stderr.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/heureka/heureka/internal/wanlink"
)

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func main() {
	sizes := flag.String("sizes", "10000,100000", "registry sizes of the remote region, comma-separated")
	changes := flag.Int("changes", 100, "registrations (and as many cancels) measured per size")
	modes := flag.String("modes", "stream,poll", "follower modes: stream (--region-stream) and/or poll")
	bin := flag.String("bin", "", "heureka binary (default: go build ./cmd/heureka)")
	remoteBin := flag.String("remote-bin", "", "heureka binary of the remote region (default: -bin)")
	followerBin := flag.String("follower-bin", "", "heureka binary of the follower (default: -bin)")
	repairChanges := flag.Int("repair-changes", 1100, "registrations the follower misses while cut off (stream mode; past the remote's window of 1024 events); 0: no repair phase")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *bin == "" {
		dir, err := os.MkdirTemp("", "wanbytes-")
		if err != nil {
			logf("wanbytes: %v", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		*bin = filepath.Join(dir, "heureka")
		if out, err := exec.Command("go", "build", "-o", *bin, "./cmd/heureka").CombinedOutput(); err != nil {
			logf("wanbytes: go build ./cmd/heureka: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	if *remoteBin == "" {
		*remoteBin = *bin
	}
	if *followerBin == "" {
		*followerBin = *bin
	}
	binName := func(b string) string {
		if b == *bin && !flagSet("bin") {
			return "this build"
		}
		return filepath.Base(b)
	}
	load, _ := os.ReadFile("/proc/loadavg")
	rev, _ := exec.Command("git", "describe", "--always", "--dirty").Output()
	fmt.Printf("`go run ./bench/cmd/wanbytes %s` on %s at revision %s; load average at the start: %s; %d CPUs, %s.\n\n",
		strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02 15:04 MST"), strings.TrimSpace(string(rev)),
		strings.Join(strings.Fields(string(load))[:3], " "), runtime.NumCPU(), runtime.Version())
	fmt.Println("| mode | remote / follower | remote instances | initial load (bytes received) | idle (bytes/s received) | per registration (bytes received) | per cancel (bytes received) | per change (bytes sent by the follower) | repair after missed changes (bytes received / sent) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|")
	failed := false
	for _, mode := range strings.Split(*modes, ",") {
		for _, s := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				logf("wanbytes: -sizes: %v", err)
				os.Exit(2)
			}
			r, err := measure(ctx, *remoteBin, *followerBin, mode, n, *changes, *repairChanges)
			if err != nil {
				logf("wanbytes: %s %d: %v", mode, n, err)
				failed = true
				continue
			}
			repair := "–"
			if r.repairMissed > 0 {
				repair = fmt.Sprintf("%d / %d (%d missed)", r.repairDown, r.repairUp, r.repairMissed)
			}
			fmt.Printf("| %s | %s / %s | %d | %d | %.0f | %.0f | %.0f | %.0f | %s |\n", mode, binName(*remoteBin), binName(*followerBin),
				n, r.initial, r.idlePerSec, r.perReg, r.perCancel, r.sentPerChange, repair)
		}
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("\nLoad average at the end: %s.\n", strings.Join(strings.Fields(string(load))[:3], " "))
	if failed {
		os.Exit(1)
	}
}

// flagSet reports whether the flag name was given.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

type result struct {
	initial                       int64
	idlePerSec, perReg, perCancel float64
	sentPerChange                 float64
	// The repair phase: bytes received and sent once the link heals after
	// repairMissed registrations.
	repairDown, repairUp int64
	repairMissed         int
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func start(bin, logName string, args ...string) (*proc, error) {
	f, err := os.CreateTemp("", "wanbytes-"+logName+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); os.Remove(f.Name()); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

var hc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func body(app, id string) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":"%s.wanbytes","app":%q,"ipAddr":"10.1.%d.%d",`+
		`"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":%q,"lastDirtyTimestamp":"%d",`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":3600}}}`,
		id, strings.ToLower(id), app, len(id)%250, len(app)%250, strings.ToLower(app), time.Now().UnixMilli())
}

func do(ctx context.Context, method, url, b string) error {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return nil
}

// waitHTTP waits until base answers /eureka/apps.
func waitHTTP(ctx context.Context, base string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := hc.Get(base + "/eureka/apps"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New(base + " not answering")
}

// remoteCount is the follower's instance count of region dc2.
func remoteCount(base string) (int, string, error) {
	resp, err := hc.Get(base + "/admin/regions")
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var doc struct {
		Remotes []struct {
			State     string `json:"state"`
			Instances int    `json:"instances"`
		} `json:"remotes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return 0, "", err
	}
	if len(doc.Remotes) != 1 {
		return 0, "", fmt.Errorf("%d remote regions", len(doc.Remotes))
	}
	return doc.Remotes[0].Instances, doc.Remotes[0].State, nil
}

// waitCount waits until the follower holds want instances of dc2.
func waitCount(ctx context.Context, base string, want int, within time.Duration) error {
	deadline := time.Now().Add(within)
	last := -1
	for time.Now().Before(deadline) {
		n, _, err := remoteCount(base)
		if err == nil && n == want {
			return nil
		}
		last = n
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("follower holds %d instances of dc2 after %v, want %d", last, within, want)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// deltaRetention is the remote's --delta-retention: how long a change stays
// in the deltas a poll gets (Eureka's and Heureka's default is 3 minutes;
// shortened so that the steady state comes soon after the loading).
const deltaRetention = 10 * time.Second

func measure(ctx context.Context, remoteBin, followerBin, mode string, n, changes, repairChanges int) (res result, err error) {
	if mode != "stream" && mode != "poll" {
		return res, fmt.Errorf("unknown mode %q", mode)
	}
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return res, err
		}
	}
	remoteAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	remote, err := start(remoteBin, "dc2", "--node-name", "dc2-a", "--region", "dc2",
		"--http-addr", remoteAddr, "--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--delta-retention", deltaRetention.String(), "--delta-retention-interval", "1s")
	if err != nil {
		return res, err
	}
	defer remote.stop()
	rbase := "http://" + remoteAddr
	if err := waitHTTP(ctx, rbase); err != nil {
		return res, err
	}

	// Load the remote: 100 applications, n instances, 64 at a time.
	t0 := time.Now()
	jobs := make(chan int)
	errc := make(chan error, 64)
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				app := fmt.Sprintf("APP%03d", i%100)
				id := fmt.Sprintf("%s-i%06d", strings.ToLower(app), i)
				if err := do(ctx, "POST", rbase+"/eureka/apps/"+app, body(app, id)); err != nil {
					select {
					case errc <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case jobs <- i:
		case err = <-errc:
		}
		if err != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return res, fmt.Errorf("loading: %w", err)
	}
	select {
	case err := <-errc:
		return res, fmt.Errorf("loading: %w", err)
	default:
	}
	logf("wanbytes: %s %d: remote loaded in %v", mode, n, time.Since(t0).Round(time.Millisecond))
	loaded := time.Now()

	px, err := wanlink.Listen(remoteAddr)
	if err != nil {
		return res, err
	}
	defer px.Close()
	followerAddr := fmt.Sprintf("127.0.0.1:%d", ports[2])
	args := []string{"--node-name", "dc1-a", "--region", "dc1",
		"--http-addr", followerAddr, "--gossip-addr", fmt.Sprintf("127.0.0.1:%d", ports[3]),
		"--remote-region", "dc2=http://" + px.Addr() + "/eureka/",
		"--region-pull-interval", "1s"}
	if mode == "poll" {
		args = append(args, "--region-stream=false")
	}
	follower, err := start(followerBin, "dc1", args...)
	if err != nil {
		return res, err
	}
	defer follower.stop()
	fbase := "http://" + followerAddr
	want := n + 1 // and the remote node's own HEUREKA instance
	if err := waitHTTP(ctx, fbase); err != nil {
		return res, err
	}
	if err := waitCount(ctx, fbase, want, 2*time.Minute); err != nil {
		return res, fmt.Errorf("initial load: %w", err)
	}
	if err := sleep(ctx, 2*time.Second); err != nil {
		return res, err
	}
	res.initial = px.Down.Load()
	// The steady state starts once the loading's registrations have left
	// the remote's delta window (polls would carry them).
	if err := sleep(ctx, time.Until(loaded.Add(deltaRetention+2*time.Second))); err != nil {
		return res, err
	}
	logf("wanbytes: %s %d: follower loaded, %d bytes received", mode, n, res.initial)

	const idle = 10 * time.Second
	d0 := px.Down.Load()
	if err := sleep(ctx, idle); err != nil {
		return res, err
	}
	res.idlePerSec = float64(px.Down.Load()-d0) / idle.Seconds()

	phase := func(method string, want int) (down, up int64, err error) {
		d, u := px.Down.Load(), px.Up.Load()
		for i := 0; i < changes; i++ {
			app := fmt.Sprintf("APP%03d", i%100)
			id := fmt.Sprintf("%s-new%04d", strings.ToLower(app), i)
			url, b := rbase+"/eureka/apps/"+app, body(app, id)
			if method == "DELETE" {
				url, b = url+"/"+id, ""
			}
			if err := do(ctx, method, url, b); err != nil {
				return 0, 0, err
			}
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return 0, 0, err
			}
		}
		if err := waitCount(ctx, fbase, want, 30*time.Second); err != nil {
			return 0, 0, err
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return 0, 0, err
		}
		return px.Down.Load() - d, px.Up.Load() - u, nil
	}
	regDown, regUp, err := phase("POST", want+changes)
	if err != nil {
		return res, fmt.Errorf("registrations: %w", err)
	}
	canDown, canUp, err := phase("DELETE", want)
	if err != nil {
		return res, fmt.Errorf("cancels: %w", err)
	}
	res.perReg = float64(regDown) / float64(changes)
	res.perCancel = float64(canDown) / float64(changes)
	res.sentPerChange = float64(regUp+canUp) / float64(2*changes)
	if mode == "stream" && repairChanges > 0 {
		if err := repairPhase(ctx, px, rbase, fbase, want, repairChanges, &res); err != nil {
			return res, fmt.Errorf("repair: %w", err)
		}
	}
	_, state, _ := remoteCount(fbase)
	var b bytes.Buffer
	fmt.Fprintf(&b, "wanbytes: %s %d: %d/%d bytes received for %d registrations/cancels; region %s", mode, n, regDown, canDown, changes, state)
	logf("%s", b.String())
	return res, nil
}

// repairPhase cuts the WAN link, registers missed new instances in 5
// applications of the remote, one event each (30 ms apart, past the
// stream's coalescing), while another watcher keeps the remote's stream
// hub numbering them, so that the follower's Last-Event-ID has left the
// remote's window (1024 events) when the link heals; then it counts what
// the follower receives and sends until it holds them: a repair by digest
// (this release), a snapshot (a follower or remote of the previous
// release), or polls.
func repairPhase(ctx context.Context, px *wanlink.Proxy, rbase, fbase string, want, missed int, res *result) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(wctx, http.MethodGet, rbase+"/eureka/stream", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return err
	}
	go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
	px.Cut()
	for i := 0; i < missed; i++ {
		app := fmt.Sprintf("APP%03d", i%5)
		id := fmt.Sprintf("%s-missed%05d", strings.ToLower(app), i)
		if err := do(ctx, "POST", rbase+"/eureka/apps/"+app, body(app, id)); err != nil {
			return err
		}
		if err := sleep(ctx, 30*time.Millisecond); err != nil {
			return err
		}
	}
	d, u := px.Down.Load(), px.Up.Load()
	px.Heal()
	if err := waitCount(ctx, fbase, want+missed, 2*time.Minute); err != nil {
		return err
	}
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	res.repairDown, res.repairUp, res.repairMissed = px.Down.Load()-d, px.Up.Load()-u, missed
	logf("wanbytes: repair after %d missed: %d bytes received, %d sent", missed, res.repairDown, res.repairUp)
	return nil
}
