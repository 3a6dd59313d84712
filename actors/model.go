package actors

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"
)

// Status is an instance's Eureka status.
type Status string

// The statuses Eureka knows. Anything else read from a client maps to
// StatusUnknown (see ParseStatus).
const (
	StatusUp           Status = "UP"
	StatusDown         Status = "DOWN"
	StatusStarting     Status = "STARTING"
	StatusOutOfService Status = "OUT_OF_SERVICE"
	StatusUnknown      Status = "UNKNOWN"
)

// AllStatuses lists the statuses in the alphabetical order the apps hashcode uses.
var AllStatuses = [...]Status{StatusDown, StatusOutOfService, StatusStarting, StatusUnknown, StatusUp}

// ParseStatus returns the status named exactly by s (upper case) and whether s
// named one. Eureka's status endpoints accept only exact names.
func ParseStatus(s string) (Status, bool) {
	// The constants are returned rather than s, so that instances share
	// them instead of holding the decoder's copies.
	switch Status(s) {
	case StatusUp:
		return StatusUp, true
	case StatusDown:
		return StatusDown, true
	case StatusStarting:
		return StatusStarting, true
	case StatusOutOfService:
		return StatusOutOfService, true
	case StatusUnknown:
		return StatusUnknown, true
	}
	return StatusUnknown, false
}

// LenientStatus maps s to a status the way Eureka's decoders do: exact names
// are kept, anything else (including "") becomes UNKNOWN.
func LenientStatus(s string) Status {
	st, _ := ParseStatus(strings.ToUpper(strings.TrimSpace(s)))
	return st
}

// ActionType says how a delta entry changed the registry.
type ActionType string

// The delta action types.
const (
	ActionAdded    ActionType = "ADDED"
	ActionModified ActionType = "MODIFIED"
	ActionDeleted  ActionType = "DELETED"
)

// Port is a port number and whether it is enabled.
type Port struct {
	Number  int
	Enabled bool
}

// DataCenterInfo describes where an instance runs. Class is the Java class
// marker ("com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo" or
// "com.netflix.appinfo.AmazonInfo"); Metadata is set for Amazon only.
type DataCenterInfo struct {
	Class    string
	Name     string
	Metadata map[string]string
}

// Default lease timings in seconds, used when a client sends none or ≤ 0.
const (
	DefaultRenewalIntervalSecs = 30
	DefaultDurationSecs        = 90
)

// LeaseInfo is the lease part of an instance as Eureka reports it. Timestamps
// are epoch milliseconds, 0 meaning unset.
type LeaseInfo struct {
	RenewalIntervalSecs   int
	DurationSecs          int
	RegistrationTimestamp int64
	LastRenewalTimestamp  int64
	EvictionTimestamp     int64
	ServiceUpTimestamp    int64
}

// Instance is one registered instance (Eureka's InstanceInfo). Values held by
// the registry are immutable once published: a change makes a new *Instance,
// so readers may share them without locks. Empty strings stand for Java's null.
// After Normalize, Metadata may be shared with other instances that have
// equal metadata: change it only on a Clone.
type Instance struct {
	InstanceID       string
	HostName         string
	App              string // upper case
	IPAddr           string
	SID              string
	Status           Status
	OverriddenStatus Status
	Port             Port
	SecurePort       Port
	CountryID        int
	DataCenterInfo   DataCenterInfo
	LeaseInfo        LeaseInfo
	Metadata         map[string]string

	AppGroupName                  string
	HomePageURL                   string
	StatusPageURL                 string
	HealthCheckURL                string
	SecureHealthCheckURL          string
	VIPAddress                    string
	SecureVIPAddress              string
	IsCoordinatingDiscoveryServer bool
	LastUpdatedTimestamp          int64
	LastDirtyTimestamp            int64
	ActionType                    ActionType
	ASGName                       string
}

// AmazonInstanceIDKey is the dataCenterInfo metadata key of an AWS instance id.
const AmazonInstanceIDKey = "instance-id"

// ID returns the instance's registry key: instanceId when set, else the
// Amazon instance-id, else hostName (Eureka's identity rule).
func (i *Instance) ID() string {
	if i.InstanceID != "" {
		return i.InstanceID
	}
	if i.DataCenterInfo.Name == "Amazon" {
		if id := i.DataCenterInfo.Metadata[AmazonInstanceIDKey]; id != "" {
			return id
		}
	}
	return i.HostName
}

// Clone returns a copy of i that shares nothing mutable with it.
func (i *Instance) Clone() *Instance {
	c := *i
	c.Metadata = cloneMap(i.Metadata)
	c.DataCenterInfo.Metadata = cloneMap(i.DataCenterInfo.Metadata)
	return &c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Normalize fills Eureka's defaults into an instance decoded from a client:
// upper-case app and group names, lease timings ≤ 0 become 30/90, unknown
// statuses become UNKNOWN (status defaults to UP when empty).
func (i *Instance) Normalize() {
	i.App = strings.ToUpper(i.App)
	i.AppGroupName = strings.ToUpper(i.AppGroupName)
	if i.Status == "" {
		i.Status = StatusUp
	} else {
		i.Status = LenientStatus(string(i.Status))
	}
	i.OverriddenStatus = LenientStatus(string(i.OverriddenStatus))
	if i.LeaseInfo.RenewalIntervalSecs <= 0 {
		i.LeaseInfo.RenewalIntervalSecs = DefaultRenewalIntervalSecs
	}
	if i.LeaseInfo.DurationSecs <= 0 {
		i.LeaseInfo.DurationSecs = DefaultDurationSecs
	}
	if i.CountryID == 0 {
		i.CountryID = 1
	}
	if i.SID == "na" || i.SID == "unknown" {
		i.SID = ""
	}
	i.intern()
}

// intern replaces the values that many instances repeat (application and
// group names, data center, VIP addresses, ASG, metadata keys) by canonical
// copies, and equal small metadata maps by one shared map, so that a
// registry of a million instances holds each such value once rather than
// once per instance. Values unique to an instance (ids, host names,
// addresses, URLs) are left alone: interning them would only add the
// canonical table's overhead.
func (i *Instance) intern() {
	i.App = intern(i.App)
	i.AppGroupName = intern(i.AppGroupName)
	i.DataCenterInfo.Class = intern(i.DataCenterInfo.Class)
	i.DataCenterInfo.Name = intern(i.DataCenterInfo.Name)
	i.VIPAddress = intern(i.VIPAddress)
	i.SecureVIPAddress = intern(i.SecureVIPAddress)
	i.ASGName = intern(i.ASGName)
	i.SID = intern(i.SID)
	i.Metadata = sharedMetadata(i.Metadata)
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

// Key identifies an instance in the registry: upper-case app name and id.
type Key struct {
	App string
	ID  string
}

// Key returns the registry key of i.
func (i *Instance) Key() Key { return Key{App: i.App, ID: i.ID()} }
