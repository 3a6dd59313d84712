package actors

// Shared values
//
// A registry of a million instances would hold the values that instances
// repeat (application and group names, data center, VIP addresses, ASG,
// small metadata maps) a million times. The application actor stores each
// instance with canonical copies of them instead (package unique; equal
// small metadata maps as one shared map), so each is held once. Values
// unique to an instance (ids, host names, addresses, URLs) are not
// interned, which would only add the canonical table's overhead; but an
// instance that repeats one (the IP address as host name, the host name as
// instance id, as Spring clients with preferIpAddress send) holds it once,
// and a host name or home page URL that its other URLs contain is held as
// part of them ("http://10.0.0.7:8080/" inside
// "http://10.0.0.7:8080/actuator/info").
//
// The actor first compares a value with the canonical copy its
// application last stored (sharedValues), which is almost always the
// same: the process-wide table is consulted only for a new value. At
// 50,000 applications a lookup in that table missed the CPU caches on
// every registration (3.7% of a fresh registration's CPU at 1M instances,
// when the HTTP decoder interned through it).

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"
)

// sharedValues is the canonical copies of the repeated values an
// application last stored. Only its actor reads and writes it.
type sharedValues struct {
	group, vip, secureVIP, asg, sid, dcClass, dcName string
	metadata                                         map[string]string
}

// share replaces in's repeated values by their canonical copies (see the
// file comment). in must be the registry's alone: its fields are written.
func (a *appState) share(in *Instance) {
	if in.App == a.name {
		in.App = a.name // interned when the application was made
	} else {
		in.App = intern(in.App)
	}
	in.HomePageURL = within(in.HomePageURL, in.StatusPageURL, in.HealthCheckURL)
	in.HostName = within(in.HostName, in.StatusPageURL, in.HealthCheckURL, in.HomePageURL)
	if in.IPAddr == in.HostName {
		in.IPAddr = in.HostName
	}
	if in.InstanceID == in.HostName {
		in.InstanceID = in.HostName
	}
	s := &a.shared
	in.AppGroupName = canonical(&s.group, in.AppGroupName)
	in.VIPAddress = canonical(&s.vip, in.VIPAddress)
	in.SecureVIPAddress = canonical(&s.secureVIP, in.SecureVIPAddress)
	in.ASGName = canonical(&s.asg, in.ASGName)
	in.SID = canonical(&s.sid, in.SID)
	in.DataCenterInfo.Class = canonical(&s.dcClass, in.DataCenterInfo.Class)
	in.DataCenterInfo.Name = canonical(&s.dcName, in.DataCenterInfo.Name)
	switch {
	case len(in.Metadata) == 0:
	case s.metadata != nil && maps.Equal(in.Metadata, s.metadata):
		in.Metadata = s.metadata
	default:
		in.Metadata = sharedMetadata(in.Metadata)
		s.metadata = in.Metadata
	}
}

// Intern replaces i's repeated values by their canonical copies as the
// registry stores them, through the process-wide table alone: for holders
// of instances outside the registry (tests, tools) that want the registry's
// memory shape. i's fields are written.
func (i *Instance) Intern() {
	i.App = intern(i.App)
	i.AppGroupName = intern(i.AppGroupName)
	i.VIPAddress = intern(i.VIPAddress)
	i.SecureVIPAddress = intern(i.SecureVIPAddress)
	i.ASGName = intern(i.ASGName)
	i.SID = intern(i.SID)
	i.DataCenterInfo.Class = intern(i.DataCenterInfo.Class)
	i.DataCenterInfo.Name = intern(i.DataCenterInfo.Name)
	i.Metadata = sharedMetadata(i.Metadata)
}

// canonical returns the canonical copy of v: *last when v equals it, else
// v interned, which becomes *last.
func canonical(last *string, v string) string {
	if v == *last {
		return *last
	}
	if v == "" {
		return ""
	}
	*last = intern(v)
	return *last
}

// intern returns the canonical copy of s. Canonical copies are collected
// when no instance holds them any more (package unique).
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// Limits of the shared metadata maps: only maps of up to
// maxSharedMetadataBytes of keys and values are shared, and the table of
// shared maps holds at most maxSharedMetadata of them (it starts over when
// full), so it stays under a few MiB whatever clients send.
const (
	maxSharedMetadata      = 4096
	maxSharedMetadataBytes = 512
)

var sharedMeta struct {
	sync.Mutex
	m map[string]map[string]string // canonical text → shared map
}

// sharedMetadata returns a map equal to m that is shared by every instance
// registered with equal metadata (m itself the first time), or m when it is
// too large to share.
func sharedMetadata(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	size := 0
	for k, v := range m {
		size += len(k) + len(v) + 2
	}
	if size > maxSharedMetadataBytes {
		return m
	}
	// The keys and the canonical text live on the stack: a registration
	// whose metadata is already shared allocates nothing here.
	var keyBuf [16]string
	keys := keyBuf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var textBuf [1024]byte
	text := textBuf[:0]
	for _, k := range keys {
		// Lengths first, so that no key or value can fake a boundary.
		text = strconv.AppendInt(text, int64(len(k)), 10)
		text = append(text, ':')
		text = append(text, k...)
		text = strconv.AppendInt(text, int64(len(m[k])), 10)
		text = append(text, ':')
		text = append(text, m[k]...)
	}
	sharedMeta.Lock()
	defer sharedMeta.Unlock()
	if s, ok := sharedMeta.m[string(text)]; ok {
		return s
	}
	if sharedMeta.m == nil || len(sharedMeta.m) >= maxSharedMetadata {
		sharedMeta.m = make(map[string]map[string]string)
	}
	s := make(map[string]string, len(m))
	for k, v := range m {
		s[intern(k)] = intern(v)
	}
	sharedMeta.m[string(text)] = s
	return s
}

// within returns v as part of the first of others that contains it, so
// that the two share their bytes (v itself when none does). The strings of
// one instance live and die together, so the longer one keeps nothing
// alive that v would not.
func within(v string, others ...string) string {
	if v == "" {
		return v
	}
	for _, o := range others {
		if i := strings.Index(o, v); i >= 0 {
			return o[i : i+len(v)]
		}
	}
	return v
}
