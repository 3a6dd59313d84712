package main

// The YAML configuration file: heureka's own keys (the flag names, at the top
// level or under "heureka:") and the Spring Cloud Netflix Eureka server
// properties users already have (eureka.server.*, server.port, ...), nested
// or flat-dotted, in any relaxed spelling. Spring keys that mean nothing here
// are reported as ignored; keys nobody knows as unknown, with the closest
// known key as a suggestion. The file becomes one layer of text values for
// loadConfig (config.go), each with the file:line key it came from.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"go.yaml.in/yaml/v3"
)

// fileKey is a key the configuration file understands.
type fileKey struct {
	name   string // spelling shown in suggestions
	native bool   // a heureka key (wins over Spring keys setting the same field)
	handle func(l *fileLoader, at keyRef, v *yaml.Node)
}

// keyRef locates a key in the file.
type keyRef struct {
	path string // full dotted path as written
	line int
}

// assignment is one setting taken from the file, as the text of a heureka
// key, chosen once the whole file has been read.
type assignment struct {
	field  string // flag name of the Config field
	at     keyRef
	native bool
	text   string
}

// fileValue is the text the file gives one heureka key, and where: the
// prefix of any error about it ("file:line: key").
type fileValue struct {
	text   string
	source string
}

// pendingValue is a Spring value combined with others after reading the file.
type pendingValue[T any] struct {
	at  keyRef
	val T
	set bool
}

// fileLoader accumulates what one configuration file says.
type fileLoader struct {
	file     string
	warnings []string
	errs     []error
	assigns  []assignment

	readOnlyCache pendingValue[bool]
	cacheInterval pendingValue[time.Duration]
	serverPort    pendingValue[int]
	serverAddress pendingValue[string]
}

func (l *fileLoader) warnf(at keyRef, format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: ", l.file, at.line)+fmt.Sprintf(format, args...))
}

func (l *fileLoader) errorf(at keyRef, format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf("%s:%d: %s: %s", l.file, at.line, at.path, fmt.Sprintf(format, args...)))
}

// canonicalKey reduces a dotted key to the form Spring's relaxed binding
// compares: each segment lower-cased without '-' or '_', so
// enable-self-preservation, enableSelfPreservation and
// enable_self_preservation are one key.
func canonicalKey(path string) string {
	segs := strings.Split(path, ".")
	for i, s := range segs {
		segs[i] = canonicalSegment(s)
	}
	return strings.Join(segs, ".")
}

func canonicalSegment(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '-' || r == '_' {
			continue
		}
		b.WriteString(strings.ToLower(string(r)))
	}
	return b.String()
}

// fileKeys maps canonical keys to their handlers.
var fileKeys = buildFileKeys()

// ignoredKeys are Spring Cloud / Netflix Eureka keys that are recognised but
// mean nothing to heureka (canonical form).
var ignoredKeys = buildIgnoredKeys()

// keyPrefixes classifies keys not listed exactly: under an "ignore" prefix a
// key is a known Spring setting heureka does not use; under a "strict" prefix
// it is unknown. The longest matching prefix decides.
var keyPrefixes = map[string]bool{ // canonical prefix -> ignored
	"eureka.server":            false,
	"eureka.instance.registry": false,
	"heureka":                  false,
	"eureka.client":            true,
	"eureka.instance":          true,
	"eureka.dashboard":         true,
	"eureka.environment":       true,
	"eureka.datacenter":        true,
	"spring":                   true,
	"server":                   true,
	"management":               true,
	"logging":                  true,
}

// springServerIgnored are eureka.server properties (Spring kebab-case; the
// Netflix eureka.<camelCase> spellings match too) with no meaning here.
var springServerIgnored = []string{
	"a-s-g-cache-expiry-timeout-ms", "a-s-g-query-timeout-ms", "a-s-g-update-interval-ms",
	"aws-access-id", "aws-secret-key", "batch-replication", "binding-strategy",
	"disable-delta", "disable-delta-for-remote-regions",
	"e-i-p-bind-rebind-retries", "e-i-p-binding-retry-interval-ms", "e-i-p-binding-retry-interval-ms-when-unbound",
	"enable-replicated-request-compression", "experimental", "g-zip-content-from-remote-region",
	"initial-capacity-of-response-cache", "json-codec-name", "list-auto-scaling-groups-role-name",
	"log-identity-headers", "max-elements-in-peer-replication-pool", "max-elements-in-status-replication-pool",
	"max-idle-thread-age-in-minutes-for-peer-replication", "max-idle-thread-in-minutes-age-for-status-replication",
	"max-threads-for-peer-replication", "max-threads-for-status-replication", "max-time-for-replication",
	"metrics", "min-available-instances-for-peer-replication", "min-threads-for-peer-replication",
	"min-threads-for-status-replication", "number-of-replication-retries", "number-registry-sync-retries",
	"peer-eureka-nodes-update-interval-ms", "peer-eureka-status-refresh-time-interval-ms",
	"peer-node-connect-timeout-ms", "peer-node-connection-idle-timeout-seconds", "peer-node-read-timeout-ms",
	"peer-node-total-connections", "peer-node-total-connections-per-host", "prime-aws-replica-connections",
	"property-resolver", "registry-sync-retry-wait-ms",
	"remote-region-connect-timeout-ms", "remote-region-connection-idle-timeout-seconds",
	"remote-region-fetch-thread-pool-size", "remote-region-read-timeout-ms",
	"remote-region-total-connections", "remote-region-total-connections-per-host", "remote-region-trust-store",
	"remote-region-trust-store-password", "remote-region-urls",
	"response-cache-auto-expiration-in-seconds", "route53-bind-rebind-retries", "route53-binding-retry-interval-ms",
	"route53-domain-t-t-l", "sync-when-timestamp-differs", "wait-time-in-ms-when-sync-empty", "xml-codec-name",
}

func buildIgnoredKeys() map[string]bool {
	m := map[string]bool{
		canonicalKey("eureka.instance.registry.default-open-for-traffic-count"): true,
	}
	for _, k := range springServerIgnored {
		m[canonicalKey("eureka.server."+k)] = true
		m[canonicalKey("eureka."+k)] = true
	}
	return m
}

func buildFileKeys() map[string]fileKey {
	m := make(map[string]fileKey)
	add := func(path string, native bool, h func(l *fileLoader, at keyRef, v *yaml.Node)) {
		m[canonicalKey(path)] = fileKey{name: path, native: native, handle: h}
	}
	// heureka's own keys, top level or under "heureka:".
	for _, o := range options {
		if o.name == "config" {
			continue
		}
		h := nativeHandler(o)
		add(o.name, true, h)
		add("heureka."+o.name, true, h)
	}
	// Spring Cloud (eureka.server.<kebab>) and Netflix (eureka.<camel>)
	// spellings: canonicalisation makes both prefixes match either case.
	server := func(name string, h func(l *fileLoader, at keyRef, v *yaml.Node)) {
		add("eureka.server."+name, false, h)
		add("eureka."+name, false, h)
	}
	server("enable-self-preservation", springBool("self-preservation"))
	server("eviction-interval-timer-in-ms", springDuration("eviction-interval", time.Millisecond))
	server("renewal-percent-threshold", springThreshold)
	server("renewal-threshold-update-interval-ms", springDuration("renewal-threshold-update-interval", time.Millisecond))
	server("expected-client-renewal-interval-seconds", springDuration("expected-client-renewal-interval", time.Second))
	server("retention-time-in-m-s-in-delta-queue", springDuration("delta-retention", time.Millisecond))
	server("delta-retention-timer-interval-in-ms", springDuration("delta-retention-interval", time.Millisecond))
	server("use-read-only-response-cache", springReadOnlyCache)
	server("should-use-read-only-response-cache", springReadOnlyCache)
	server("response-cache-update-interval-ms", springCacheInterval)
	// Eureka's RateLimitingFilter settings (security.go).
	server("rate-limiter-enabled", springBool("rate-limit"))
	server("rate-limiter-throttle-standard-clients", springBool("rate-limit-throttle-standard-clients"))
	server("rate-limiter-burst-size", springOption("rate-limit-burst"))
	server("rate-limiter-registry-fetch-average-rate", springOption("rate-limit-fetch-rate"))
	server("rate-limiter-full-fetch-average-rate", springOption("rate-limit-full-fetch-rate"))
	server("rate-limiter-privileged-clients", springOption("rate-limit-privileged-clients"))
	// Remote regions (regions.go).
	server("remote-region-urls-with-name", springRemoteRegions)
	server("remote-region-app-whitelist", springRegionApps)
	server("remote-region-registry-fetch-interval", springDuration("region-pull-interval", time.Second))
	server("disable-transparent-fallback-to-other-region", springNoFallback)
	add("eureka.client.region", false, springOption("region"))
	add("eureka.instance.registry.expected-number-of-clients-sending-renews", false, springExpectedRenewers)
	add("server.port", false, springServerPort)
	add("server.address", false, springServerAddress)
	return m
}

// scalar returns the text of a scalar value node; ok is false (after
// recording an error) for any other kind, and for null.
func (l *fileLoader) scalar(at keyRef, v *yaml.Node) (string, bool) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.ShortTag() == "!!null" {
			return "", false
		}
		return v.Value, true
	case yaml.MappingNode:
		l.errorf(at, "wrong type: want a single value, got a mapping")
	case yaml.SequenceNode:
		l.errorf(at, "wrong type: want a single value, got a list")
	default:
		l.errorf(at, "wrong type: want a single value")
	}
	return "", false
}

// nativeHandler reads a heureka key with the option's own parser.
func nativeHandler(o option) func(l *fileLoader, at keyRef, v *yaml.Node) {
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		var text string
		if o.list && v.Kind == yaml.SequenceNode {
			parts := make([]string, 0, len(v.Content))
			for _, e := range v.Content {
				e = deref(e)
				if e.Kind != yaml.ScalarNode {
					l.errorf(at, "wrong type: want a list of strings")
					return
				}
				parts = append(parts, e.Value)
			}
			text = strings.Join(parts, ",")
		} else {
			s, ok := l.scalar(at, v)
			if !ok {
				return
			}
			text = s
		}
		var scratch Config
		if err := o.set(&scratch, text); err != nil {
			l.errs = append(l.errs, invalidValue(fmt.Sprintf("%s:%d: %s", l.file, at.line, at.path), text, o.secret, err))
			return
		}
		l.assigns = append(l.assigns, assignment{field: o.name, at: at, native: true, text: text})
	}
}

// springValue parses a scalar with parse, recording a type error naming the
// key on failure.
func springValue[T any](l *fileLoader, at keyRef, v *yaml.Node, parse func(string) (T, error)) (T, bool) {
	var zero T
	s, ok := l.scalar(at, v)
	if !ok {
		return zero, false
	}
	val, err := parse(s)
	if err != nil {
		l.errs = append(l.errs, invalidValue(fmt.Sprintf("%s:%d: %s", l.file, at.line, at.path), s, false, err))
		return zero, false
	}
	return val, true
}

func springBool(field string) func(l *fileLoader, at keyRef, v *yaml.Node) {
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		if b, ok := springValue(l, at, v, parseBool); ok {
			l.assigns = append(l.assigns, assignment{field: field, at: at, text: strconv.FormatBool(b)})
		}
	}
}

// parseCount returns a parser of positive integer counts of unit.
func parseCount(unit time.Duration) func(string) (time.Duration, error) {
	name := map[time.Duration]string{time.Millisecond: "milliseconds", time.Second: "seconds"}[unit]
	return func(s string) (time.Duration, error) {
		n, err := parseInt(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%v (want a whole number of %s)", err, name)
		}
		if n <= 0 || n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("want a positive number of %s", name)
		}
		return time.Duration(n) * unit, nil
	}
}

func springDuration(field string, unit time.Duration) func(l *fileLoader, at keyRef, v *yaml.Node) {
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		if d, ok := springValue(l, at, v, parseCount(unit)); ok {
			l.assigns = append(l.assigns, assignment{field: field, at: at, text: formatDuration(d)})
		}
	}
}

func springThreshold(l *fileLoader, at keyRef, v *yaml.Node) {
	if f, ok := springValue(l, at, v, parseThreshold); ok {
		l.assigns = append(l.assigns, assignment{field: "renewal-percent-threshold", at: at, text: strconv.FormatFloat(f, 'g', -1, 64)})
	}
}

func springExpectedRenewers(l *fileLoader, at keyRef, v *yaml.Node) {
	if n, ok := springValue(l, at, v, parseRenewers); ok {
		l.assigns = append(l.assigns, assignment{field: "expected-initial-renewers", at: at, text: strconv.Itoa(n)})
	}
}

// setPending records a value combined later, warning when the key was
// already given.
func setPending[T any](l *fileLoader, p *pendingValue[T], at keyRef, val T) {
	if p.set {
		l.warnf(at, "%s overrides %s (line %d), which sets the same property", at.path, p.at.path, p.at.line)
	}
	*p = pendingValue[T]{at: at, val: val, set: true}
}

func springReadOnlyCache(l *fileLoader, at keyRef, v *yaml.Node) {
	if b, ok := springValue(l, at, v, parseBool); ok {
		setPending(l, &l.readOnlyCache, at, b)
	}
}

func springCacheInterval(l *fileLoader, at keyRef, v *yaml.Node) {
	if d, ok := springValue(l, at, v, parseCount(time.Millisecond)); ok {
		setPending(l, &l.cacheInterval, at, d)
	}
}

func springServerPort(l *fileLoader, at keyRef, v *yaml.Node) {
	p, ok := springValue(l, at, v, func(s string) (int, error) {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
		if err != nil {
			return 0, errors.New("want a port number from 0 to 65535")
		}
		return int(n), nil
	})
	if ok {
		setPending(l, &l.serverPort, at, p)
	}
}

func springServerAddress(l *fileLoader, at keyRef, v *yaml.Node) {
	a, ok := springValue(l, at, v, func(s string) (string, error) {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, " \t/") {
			return "", errors.New("want an IP address or host name")
		}
		return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), nil
	})
	if ok {
		setPending(l, &l.serverAddress, at, a)
	}
}

// resolvePending turns the combined Spring settings into assignments.
func (l *fileLoader) resolvePending() {
	if l.readOnlyCache.set || l.cacheInterval.set {
		use := !l.readOnlyCache.set || l.readOnlyCache.val // Spring's default is true
		interval := 30 * time.Second                       // Eureka's responseCacheUpdateIntervalMs
		if l.cacheInterval.set {
			interval = l.cacheInterval.val
		}
		var d time.Duration
		if use {
			d = interval
		}
		at := l.readOnlyCache.at
		if !l.readOnlyCache.set {
			at = l.cacheInterval.at
		}
		l.assigns = append(l.assigns, assignment{field: "response-cache-update-interval", at: at, text: formatDuration(d)})
	}
	if l.serverPort.set || l.serverAddress.set {
		port, addr := l.serverPort, l.serverAddress
		at := port.at
		if !port.set {
			at = addr.at
		}
		// The part not given keeps the default (the layer below the file).
		host, p, _ := net.SplitHostPort(DefaultConfig().HTTPAddr)
		if port.set {
			p = strconv.Itoa(port.val)
		}
		if addr.set {
			host = addr.val
		}
		l.assigns = append(l.assigns, assignment{field: "http-addr", at: at, text: net.JoinHostPort(host, p)})
	}
}

// values returns the file's value of each heureka key it sets. When several
// keys set one field, a heureka key beats a Spring key, otherwise the later
// key wins; either way a warning names both.
func (l *fileLoader) values() map[string]fileValue {
	chosen := make(map[string]int)
	var order []string
	for i, a := range l.assigns {
		j, seen := chosen[a.field]
		if !seen {
			chosen[a.field] = i
			order = append(order, a.field)
			continue
		}
		win, lose := i, j
		if l.assigns[j].native && !a.native {
			win, lose = j, i
		}
		w, ls := l.assigns[win], l.assigns[lose]
		l.warnf(ls.at, "%s is overridden by %s (line %d); both set --%s", ls.at.path, w.at.path, w.at.line, a.field)
		chosen[a.field] = win
	}
	out := make(map[string]fileValue, len(order))
	for _, f := range order {
		a := l.assigns[chosen[f]]
		out[f] = fileValue{text: a.text, source: fmt.Sprintf("%s:%d: %s", l.file, a.at.line, a.at.path)}
	}
	return out
}

// deref follows YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// walk visits the entries of mapping m found under the key path raw.
func (l *fileLoader) walk(m *yaml.Node, raw []string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := deref(m.Content[i]), deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			l.errs = append(l.errs, fmt.Errorf("%s:%d: %s: wrong type: keys must be strings", l.file, k.Line, strings.Join(raw, ".")))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			l.merge(k, v, raw)
			continue
		}
		path := append(slices.Clip(raw), strings.Split(k.Value, ".")...)
		l.visit(keyRef{path: strings.Join(path, "."), line: k.Line}, v, path)
	}
}

// merge handles a YAML merge key ("<<: *anchor").
func (l *fileLoader) merge(k, v *yaml.Node, raw []string) {
	switch v.Kind {
	case yaml.MappingNode:
		l.walk(v, raw)
	case yaml.SequenceNode:
		for _, e := range v.Content {
			if e = deref(e); e.Kind == yaml.MappingNode {
				l.walk(e, raw)
			}
		}
	default:
		l.errs = append(l.errs, fmt.Errorf("%s:%d: merge key <<: wrong type: want a mapping", l.file, k.Line))
	}
}

// visit handles the value v of the key at path.
func (l *fileLoader) visit(at keyRef, v *yaml.Node, path []string) {
	canon := canonicalKey(at.path)
	if fk, ok := fileKeys[canon]; ok {
		fk.handle(l, at, v)
		return
	}
	if canon == "config" {
		l.warnf(at, "ignored: config (a configuration file cannot name another one)")
		return
	}
	if v.Kind == yaml.MappingNode {
		l.walk(v, path)
		return
	}
	for known := range fileKeys {
		if strings.HasPrefix(known, canon+".") {
			l.errorf(at, "wrong type: want a mapping (for example %s)", fileKeys[known].name)
			return
		}
	}
	if ignoredKeys[canon] {
		l.warnf(at, "ignored: %s (not used by heureka)", at.path)
		return
	}
	best, ignored := -1, false
	for p, ign := range keyPrefixes {
		if (canon == p || strings.HasPrefix(canon, p+".")) && len(p) > best {
			best, ignored = len(p), ign
		}
	}
	if ignored {
		l.warnf(at, "ignored: %s (not used by heureka)", at.path)
		return
	}
	msg := fmt.Sprintf("unknown configuration key %q", at.path)
	if s := suggestKey(canon); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	l.warnf(at, "%s", msg)
}

// suggestKey returns the known key closest to canon (Levenshtein distance
// below 3, ties to the alphabetically first spelling), or "" when none is
// close.
func suggestKey(canon string) string {
	best, bestDist := "", 3
	for c, fk := range fileKeys {
		if d := levenshtein.ComputeDistance(canon, c); d < bestDist || (d == bestDist && best != "" && fk.name < best) {
			best, bestDist = fk.name, d
		}
	}
	return best
}

// loadFile reads the YAML configuration file at path: the value of each
// heureka key it sets (see fileLoader.values), warnings about keys it
// ignores, and an error naming file, line and key for every bad value.
func loadFile(path string) (map[string]fileValue, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, nil // empty file
		}
		return nil, nil, syntaxError(path, data, err)
	}
	l := &fileLoader{file: path}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: only the first YAML document is used; the rest is ignored", path, extra.Line))
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, syntaxError(path, data, err)
	}
	var root *yaml.Node
	if len(doc.Content) > 0 {
		root = deref(doc.Content[0])
	}
	switch {
	case root == nil || (root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null"):
		return nil, l.warnings, nil
	case root.Kind != yaml.MappingNode:
		return nil, l.warnings, fmt.Errorf("config file %s:%d: wrong type: the top level must be a mapping of keys to values", path, root.Line)
	}
	l.walk(root, nil)
	l.resolvePending()
	if len(l.errs) > 0 {
		return nil, l.warnings, errors.Join(l.errs...)
	}
	return l.values(), l.warnings, nil
}

// yamlLine matches the "yaml: line N: " that starts the YAML parser's errors.
var yamlLine = regexp.MustCompile(`^yaml: line \d+: `)

// syntaxError reports a YAML syntax error as "config file F:N: message",
// with N found by syntaxErrorLine: the parser's own line is often that of
// the enclosing block (an unclosed "[" on line 5 of a mapping that starts on
// line 1 is reported on line 1), which sends people to the wrong place.
func syntaxError(path string, data []byte, err error) error {
	msg := yamlLine.ReplaceAllString(err.Error(), "")
	msg = strings.TrimPrefix(msg, "yaml: ")
	if n := syntaxErrorLine(data); n > 0 {
		return fmt.Errorf("config file %s:%d: %s", path, n, msg)
	}
	return fmt.Errorf("config file %s: %s", path, msg)
}

// syntaxErrorLine returns the line where data stops being YAML: the first
// line n such that the document cut after n lines, and after every later
// line, fails to parse (a cut inside a construct that closes later, such as
// a flow sequence or a quoted string spread over lines, fails too, but a
// later cut parses again). 0 if data parses, or no line can be blamed.
func syntaxErrorLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	parses := func(n int) bool {
		dec := yaml.NewDecoder(bytes.NewReader(bytes.Join(lines[:n], nil)))
		for {
			var doc yaml.Node
			if err := dec.Decode(&doc); err != nil {
				return errors.Is(err, io.EOF)
			}
		}
	}
	if parses(len(lines)) {
		return 0
	}
	blame := 0
	for n := len(lines); n >= 1 && !parses(n); n-- {
		blame = n
	}
	return blame
}
