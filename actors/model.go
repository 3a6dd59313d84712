package actors

import "strings"

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
}

// Key identifies an instance in the registry: upper-case app name and id.
type Key struct {
	App string
	ID  string
}

// Key returns the registry key of i.
func (i *Instance) Key() Key { return Key{App: i.App, ID: i.ID()} }
