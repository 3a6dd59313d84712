package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// obj is one decoded YAML object.
type obj = map[string]any

// get walks nested maps by key; nil when a key is missing.
func get(o any, path ...string) any {
	for _, k := range path {
		m, ok := o.(obj)
		if !ok {
			return nil
		}
		o = m[k]
	}
	return o
}

func getString(o any, path ...string) string { s, _ := get(o, path...).(string); return s }

func getList(o any, path ...string) []any { l, _ := get(o, path...).([]any); return l }

// intOf reads a YAML number (or a numeric string).
func intOf(v any) (int, bool) {
	switch v := v.(type) {
	case int:
		return v, true
	case string:
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	return 0, false
}

// loadManifests decodes every document of every k8s/*.yaml file but the
// kustomization, by "Kind/name".
func loadManifests(t *testing.T) (map[string]obj, []string) {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string]obj{}
	var names []string
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		names = append(names, filepath.Base(f))
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc obj
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			if doc == nil {
				continue
			}
			key := getString(doc, "kind") + "/" + getString(doc, "metadata", "name")
			require.NotContains(t, out, key, "%s is defined twice", key)
			require.NotEmpty(t, getString(doc, "apiVersion"), key)
			out[key] = doc
		}
	}
	return out, names
}

// selects reports whether a selector (label map) matches labels.
func selects(selector, labels any) bool {
	sel, _ := selector.(obj)
	lab, _ := labels.(obj)
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if lab[k] != v {
			return false
		}
	}
	return true
}

// varRefRe is Kubernetes' $(VAR) reference in args.
var varRefRe = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkArgs checks that every --flag of args is one the binary knows, and
// returns the flags' values.
func checkArgs(t *testing.T, cli cliFlags, args []string, where string) map[string]string {
	t.Helper()
	values := map[string]string{}
	for i, a := range args {
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		value := ""
		if n, v, hasValue := strings.Cut(name, "="); hasValue {
			name, value = n, v
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			value = args[i+1]
		}
		assert.True(t, cli.flags[name], "%s: --%s is not a flag of heureka (heureka help)", where, name)
		values[name] = value
	}
	return values
}

func TestKubernetesManifests(t *testing.T) {
	cli := binaryFlags(t)
	httpPort, gossipPort := cli.defaultPort(t, "http-addr"), cli.defaultPort(t, "gossip-addr")
	docs, files := loadManifests(t)

	// The kustomization applies every manifest.
	raw, err := os.ReadFile("k8s/kustomization.yaml")
	require.NoError(t, err)
	var kust obj
	require.NoError(t, yaml.Unmarshal(raw, &kust))
	var resources []string
	for _, r := range getList(kust, "resources") {
		resources = append(resources, r.(string))
	}
	assert.ElementsMatch(t, files, resources, "kustomization.yaml lists every manifest")

	// The server workload.
	var work obj
	for key, d := range docs {
		if strings.HasPrefix(key, "StatefulSet/") || strings.HasPrefix(key, "Deployment/") {
			require.Nil(t, work, "one server workload")
			work = d
		}
	}
	require.NotNil(t, work, "a StatefulSet or Deployment")
	pod := get(work, "spec", "template")
	podLabels := get(pod, "metadata", "labels")
	assert.True(t, selects(get(work, "spec", "selector", "matchLabels"), podLabels), "the workload selects its pods")
	containers := getList(pod, "spec", "containers")
	require.Len(t, containers, 1)
	c := containers[0]

	// Named container ports, equal to the binary's defaults.
	ports := map[string]int{}
	protocols := map[string]string{}
	for _, p := range getList(c, "ports") {
		n, _ := intOf(get(p, "containerPort"))
		ports[getString(p, "name")] = n
		protocols[getString(p, "name")] = getString(p, "protocol")
	}
	assert.Equal(t, httpPort, strconv.Itoa(ports["http"]), "container port http = --http-addr's default")
	var gossipProtos []string
	for name, n := range ports {
		if name != "http" && strconv.Itoa(n) == gossipPort {
			gossipProtos = append(gossipProtos, protocols[name])
		}
	}
	assert.ElementsMatch(t, []string{"TCP", "UDP"}, gossipProtos, "gossip port %s open for TCP and UDP", gossipPort)
	resolve := func(port any) string {
		if n, ok := intOf(port); ok {
			return strconv.Itoa(n)
		}
		s, _ := port.(string)
		require.Contains(t, ports, s, "named port %q", s)
		return strconv.Itoa(ports[s])
	}

	// Probes.
	assert.Equal(t, "/readyz", getString(c, "readinessProbe", "httpGet", "path"))
	assert.Equal(t, httpPort, resolve(get(c, "readinessProbe", "httpGet", "port")))
	assert.Equal(t, "/healthz", getString(c, "livenessProbe", "httpGet", "path"))
	assert.Equal(t, httpPort, resolve(get(c, "livenessProbe", "httpGet", "port")))

	// Graceful stop: a preStop pause, then SIGTERM with time to leave.
	assert.NotNil(t, get(c, "lifecycle", "preStop"), "a preStop hook")
	grace, ok := intOf(get(pod, "spec", "terminationGracePeriodSeconds"))
	require.True(t, ok, "terminationGracePeriodSeconds is set")
	preStop, _ := intOf(get(c, "lifecycle", "preStop", "sleep", "seconds"))
	assert.GreaterOrEqual(t, grace, preStop+25, "room for the preStop pause, 15 s of HTTP drain and the leave")

	// Not root.
	assert.Equal(t, true, get(pod, "spec", "securityContext", "runAsNonRoot"))
	uid, _ := intOf(get(pod, "spec", "securityContext", "runAsUser"))
	assert.NotZero(t, uid)

	// Environment: every HEUREKA_* is one the binary reads; the node name
	// is the pod name; every $(VAR) the args use is defined.
	env := map[string]obj{}
	for _, e := range getList(c, "env") {
		name := getString(e, "name")
		env[name] = e.(obj)
		if strings.HasPrefix(name, "HEUREKA_") {
			assert.True(t, cli.env[name], "%s is not a variable heureka reads", name)
		}
	}
	require.Contains(t, env, "HEUREKA_NODE_NAME")
	assert.Equal(t, "metadata.name", getString(env["HEUREKA_NODE_NAME"], "valueFrom", "fieldRef", "fieldPath"))
	var args []string
	for _, a := range getList(c, "args") {
		args = append(args, a.(string))
		for _, m := range varRefRe.FindAllStringSubmatch(a.(string), -1) {
			assert.Contains(t, env, m[1], "args use $(%s), which env does not define", m[1])
		}
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		assert.Equal(t, "serve", args[0], "the server command")
	}
	values := checkArgs(t, cli, args, "statefulset args")

	// --advertise-addr is the pod IP; --join is the headless Service.
	require.Contains(t, values, "advertise-addr")
	ref := varRefRe.FindStringSubmatch(values["advertise-addr"])
	require.NotNil(t, ref, "--advertise-addr comes from the environment")
	assert.Equal(t, "status.podIP", getString(env[ref[1]], "valueFrom", "fieldRef", "fieldPath"))
	require.Contains(t, values, "join")
	joinHost, joinPort, err := net.SplitHostPort(values["join"])
	require.NoError(t, err, "--join is host:port")
	assert.Equal(t, gossipPort, joinPort)
	seedService := strings.SplitN(joinHost, ".", 2)[0]
	headless := docs["Service/"+seedService]
	require.NotNil(t, headless, "--join names Service %q", seedService)
	assert.Equal(t, "None", getString(headless, "spec", "clusterIP"), "the seed Service is headless: its name lists every pod")
	assert.Equal(t, true, get(headless, "spec", "publishNotReadyAddresses"), "pods that are not ready yet (syncing) must be found to sync")
	assert.True(t, selects(get(headless, "spec", "selector"), podLabels), "the seed Service selects the pods")
	if strings.HasPrefix(getString(work, "kind"), "StatefulSet") {
		assert.Equal(t, seedService, getString(work, "spec", "serviceName"))
	}
	var headlessProtos []string
	for _, p := range getList(headless, "spec", "ports") {
		n, _ := intOf(get(p, "port"))
		assert.Equal(t, gossipPort, strconv.Itoa(n))
		assert.Equal(t, gossipPort, resolve(get(p, "targetPort")))
		headlessProtos = append(headlessProtos, getString(p, "protocol"))
	}
	assert.ElementsMatch(t, []string{"TCP", "UDP"}, headlessProtos)

	// The client Service: one URL on the HTTP port.
	var clientSvc obj
	for key, d := range docs {
		if strings.HasPrefix(key, "Service/") && key != "Service/"+seedService {
			clientSvc = d
		}
	}
	require.NotNil(t, clientSvc, "a client-facing Service")
	assert.NotEqual(t, "None", getString(clientSvc, "spec", "clusterIP"))
	assert.True(t, selects(get(clientSvc, "spec", "selector"), podLabels))
	cports := getList(clientSvc, "spec", "ports")
	require.Len(t, cports, 1)
	n, _ := intOf(get(cports[0], "port"))
	assert.Equal(t, httpPort, strconv.Itoa(n))
	assert.Equal(t, httpPort, resolve(get(cports[0], "targetPort")))

	// The disruption budget covers the pods.
	var pdb obj
	for key, d := range docs {
		if strings.HasPrefix(key, "PodDisruptionBudget/") {
			pdb = d
		}
	}
	require.NotNil(t, pdb, "a PodDisruptionBudget")
	assert.True(t, selects(get(pdb, "spec", "selector", "matchLabels"), podLabels))
	assert.True(t, get(pdb, "spec", "maxUnavailable") != nil || get(pdb, "spec", "minAvailable") != nil)

	// The binary takes the pod's args and environment as Kubernetes would
	// expand them (on free loopback ports), serves, and leaves within the
	// grace period.
	podEnv := map[string]string{}
	for name, e := range env {
		switch {
		case get(e, "value") != nil:
			podEnv[name] = fmt.Sprint(get(e, "value"))
		case getString(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.name":
			podEnv[name] = "heureka-0"
		case getString(e, "valueFrom", "fieldRef", "fieldPath") == "metadata.namespace":
			podEnv[name] = "default"
		case getString(e, "valueFrom", "fieldRef", "fieldPath") == "status.podIP":
			podEnv[name] = "127.0.0.1"
		}
	}
	var runArgs []string
	for _, a := range args {
		runArgs = append(runArgs, varRefRe.ReplaceAllStringFunc(a, func(ref string) string {
			return podEnv[varRefRe.FindStringSubmatch(ref)[1]]
		}))
	}
	hp, gp := freePort(t), freePort(t)
	runArgs = append(runArgs, "--http-addr=127.0.0.1:"+hp, "--gossip-addr=127.0.0.1:"+gp)
	// (It is not ready: its seed does not resolve here, so it waits
	// --ready-timeout before serving registry reads.)
	runBinary(t, runArgs, podEnv, "127.0.0.1:"+hp, time.Duration(grace)*time.Second, nil)
}

// unit is a parsed systemd unit: section → key → values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: not key=value: %q", path, line)
			require.NotEmpty(t, section, "%s: %q outside a section", path, line)
			u[section][k] = append(u[section][k], v)
		}
	}
	require.NoError(t, sc.Err())
	return u
}

func (u unit) last(section, key string) (string, bool) {
	v := u[section][key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

func TestSystemdUnit(t *testing.T) {
	cli := binaryFlags(t)
	httpPort, gossipPort := cli.defaultPort(t, "http-addr"), cli.defaultPort(t, "gossip-addr")
	const path = "systemd/heureka.service"
	u := parseUnit(t, path)
	for _, s := range []string{"Unit", "Service", "Install"} {
		require.Contains(t, u, s)
	}
	execStart, ok := u.last("Service", "ExecStart")
	require.True(t, ok)
	argv := strings.Fields(execStart)
	require.NotEmpty(t, argv)
	assert.True(t, filepath.IsAbs(argv[0]), "ExecStart starts with an absolute path")
	assert.Equal(t, "heureka", filepath.Base(argv[0]))
	args := argv[1:]
	values := checkArgs(t, cli, args, "ExecStart")
	for flag, port := range map[string]string{"http-addr": httpPort, "gossip-addr": gossipPort} {
		if v, ok := values[flag]; ok {
			_, p, err := net.SplitHostPort(v)
			require.NoError(t, err, "--%s", flag)
			assert.Equal(t, port, p, "--%s keeps the default port", flag)
		}
	}
	env := map[string]string{}
	for _, e := range u["Service"]["Environment"] {
		for _, kv := range strings.Fields(e) {
			k, v, _ := strings.Cut(strings.Trim(kv, `"`), "=")
			env[k] = v
			if strings.HasPrefix(k, "HEUREKA_") {
				assert.True(t, cli.env[k], "%s is not a variable heureka reads", k)
			}
		}
	}

	// Stopping: SIGTERM (systemd's default) and time for the graceful leave.
	if sig, ok := u.last("Service", "KillSignal"); ok {
		assert.Equal(t, "SIGTERM", sig)
	}
	stop, ok := u.last("Service", "TimeoutStopSec")
	require.True(t, ok, "TimeoutStopSec")
	stopDur, err := time.ParseDuration(strings.TrimSuffix(stop, "s") + "s")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, stopDur, 30*time.Second)

	// Hardening.
	for key, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"PrivateDevices": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
		"ProtectControlGroups": "yes", "RestrictNamespaces": "yes", "RestrictSUIDSGID": "yes",
		"LockPersonality": "yes", "MemoryDenyWriteExecute": "yes", "CapabilityBoundingSet": "",
		"SystemCallArchitectures": "native",
	} {
		v, ok := u.last("Service", key)
		if assert.True(t, ok, "hardening: %s is not set", key) {
			assert.Equal(t, want, v, key)
		}
	}
	dyn, _ := u.last("Service", "DynamicUser")
	user, _ := u.last("Service", "User")
	assert.True(t, dyn == "yes" || (user != "" && user != "root" && user != "0"), "runs as an unprivileged user")
	families, _ := u.last("Service", "RestrictAddressFamilies")
	for _, fam := range []string{"AF_INET", "AF_INET6"} {
		assert.Contains(t, strings.Fields(families), fam)
	}
	assert.NotEmpty(t, u["Service"]["SystemCallFilter"])

	// systemd's own checker, on the unit with the binary built here.
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		dir := t.TempDir()
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		fixed := strings.ReplaceAll(string(raw), "ExecStart="+argv[0], "ExecStart="+heurekaBinary(t))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "heureka.service"), []byte(fixed), 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, sa, "verify", filepath.Join(dir, "heureka.service")).CombinedOutput()
		assert.NoError(t, err, "systemd-analyze verify:\n%s", out)
	}

	// The binary takes ExecStart's arguments and Environment (on free
	// loopback ports) and stops cleanly within TimeoutStopSec.
	hp, gp := freePort(t), freePort(t)
	runArgs := append(append([]string{}, args...), "--http-addr=127.0.0.1:"+hp, "--gossip-addr=127.0.0.1:"+gp)
	runBinary(t, runArgs, env, "127.0.0.1:"+hp, stopDur, func(base string) {
		// A node alone is ready at once, and lists itself as a server.
		require.Eventually(t, func() bool {
			req, _ := http.NewRequest("GET", base+"/eureka/apps/HEUREKA", nil)
			req.Header.Set("Accept", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"app":"HEUREKA"`) &&
				strings.Contains(string(body), `"serviceUrl":"http://127.0.0.1:`+hp+`/eureka/"`)
		}, 10*time.Second, 50*time.Millisecond, "the node registers itself as application HEUREKA")
		http.DefaultClient.CloseIdleConnections()
	})
}

// dockerfile is the instructions of a Dockerfile, continuations joined.
type instruction struct{ cmd, args string }

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

func TestDockerfile(t *testing.T) {
	cli := binaryFlags(t)
	httpPort, gossipPort := cli.defaultPort(t, "http-addr"), cli.defaultPort(t, "gossip-addr")
	ins := parseDockerfile(t, "Dockerfile")
	var froms []int
	for i, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, i)
		}
	}
	require.GreaterOrEqual(t, len(froms), 2, "multi-stage")
	final := ins[froms[len(froms)-1]:]
	base := strings.Fields(final[0].args)[0]
	assert.True(t, base == "scratch" || strings.Contains(base, "distroless"), "final stage on scratch or distroless, not %s", base)

	build := false
	for _, in := range ins[:froms[len(froms)-1]] {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			build = true
			assert.Contains(t, in.args, "CGO_ENABLED=0", "a static binary")
			assert.Contains(t, in.args, "./cmd/heureka")
		}
	}
	assert.True(t, build, "a build stage runs go build")

	var user, entry, copied string
	exposed := map[string]bool{}
	for _, in := range final {
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			for _, p := range strings.Fields(in.args) {
				if !strings.Contains(p, "/") {
					p += "/tcp"
				}
				exposed[p] = true
			}
		case "ENTRYPOINT":
			entry = in.args
		case "COPY":
			f := strings.Fields(in.args)
			copied = f[len(f)-1]
		}
	}
	name, _, _ := strings.Cut(user, ":")
	assert.NotContains(t, []string{"", "0", "root"}, name, "USER is not root")
	for _, p := range []string{httpPort + "/tcp", gossipPort + "/tcp", gossipPort + "/udp"} {
		assert.True(t, exposed[p], "EXPOSE %s (the flag defaults)", p)
	}
	assert.Equal(t, `["`+copied+`"]`, entry, "ENTRYPOINT runs the copied binary")

	// The ignore file keeps everything the build needs: the packages
	// ./cmd/heureka imports and the files they embed.
	ignore := dockerIgnore(t, "Dockerfile.dockerignore")
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list := exec.CommandContext(ctx, "go", "list", "-deps", "-f", `{{if .Module}}{{if .Module.Main}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{"\n"}}{{end}}{{end}}`, "./cmd/heureka")
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err)
	needed := []string{"go.mod", "go.sum"}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		rel, err := filepath.Rel(root, f[0])
		require.NoError(t, err)
		for _, file := range f[1:] {
			needed = append(needed, filepath.ToSlash(filepath.Join(rel, file)))
		}
	}
	for _, p := range needed {
		assert.False(t, ignore(p), "Dockerfile.dockerignore excludes %s, which the build needs", p)
	}

	// With a Docker daemon at hand, build the image and run it.
	t.Run("build", func(t *testing.T) {
		if _, err := exec.LookPath("docker"); err != nil {
			t.Skip("no docker")
		}
		if err := exec.Command("docker", "info").Run(); err != nil {
			t.Skip("no Docker daemon")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		tag := "heureka-deploy-test:" + strconv.FormatInt(time.Now().UnixNano(), 36)
		b := exec.CommandContext(ctx, "docker", "build", "-f", "deploy/Dockerfile", "-t", tag, ".")
		b.Dir = root
		out, err := b.CombinedOutput()
		require.NoError(t, err, "docker build:\n%s", out)
		defer exec.Command("docker", "rmi", "-f", tag).Run()
		out, err = exec.CommandContext(ctx, "docker", "run", "--rm", tag, "version").CombinedOutput()
		require.NoError(t, err, "docker run version:\n%s", out)
		assert.Contains(t, string(out), "heureka")
	})
}

// dockerIgnore returns a matcher for a .dockerignore file's patterns
// (enough of Docker's rules for ours: a pattern matches a path or any of
// its parent directories, "**/" matches any number of directories, "!"
// re-includes).
func dockerIgnore(t *testing.T, path string) func(string) bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var patterns []string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	matchOne := func(pattern, p string) bool {
		parts := strings.Split(p, "/")
		anyDepth := strings.HasPrefix(pattern, "**/")
		pattern = strings.TrimPrefix(pattern, "**/")
		for start := 0; start < len(parts); start++ {
			if start > 0 && !anyDepth {
				break
			}
			for end := start + 1; end <= len(parts); end++ {
				if ok, _ := filepath.Match(pattern, strings.Join(parts[start:end], "/")); ok {
					return true
				}
			}
		}
		return false
	}
	return func(p string) bool {
		excluded := false
		for _, pat := range patterns {
			if neg, ok := strings.CutPrefix(pat, "!"); ok {
				if matchOne(neg, p) {
					excluded = false
				}
			} else if matchOne(pat, p) {
				excluded = true
			}
		}
		return excluded
	}
}
