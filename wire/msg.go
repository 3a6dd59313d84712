package wire

// ProtocolVersion is the highest version of the wire format this build
// speaks: the version byte of the frames it sends to a peer that speaks it
// too. Bump it on any change to a message struct (see the package doc).
//
// Version 2: records carry the lease's last renewal, sync requests carry the
// asker's record versions, and members report their renewal counts (Load).
// Version 3: a record batch carries the sender's wall clock (Records.SentAt).
// Version 4: the lease ages an owner hands to the next one (Handoff).
// Version 5: a renewal report carries the members alive in the sender's
// view (Load.Alive).
const ProtocolVersion uint8 = 5

// MinProtocolVersion is the oldest version this build reads and writes: the
// previous release's ProtocolVersion (see "Compatibility" in the package
// doc). When ProtocolVersion is bumped, this becomes the old
// ProtocolVersion, and the version before it is dropped.
const MinProtocolVersion uint8 = 4

// Common returns the highest version that this build and a peer speaking
// peerMin to peerMax both speak, and false when they share none.
func Common(peerMin, peerMax uint8) (uint8, bool) {
	v := min(peerMax, ProtocolVersion)
	if peerMin > peerMax || v < max(peerMin, MinProtocolVersion) {
		return 0, false
	}
	return v, true
}

// Supported reports whether this build reads and writes version v.
func Supported(v uint8) bool { return v >= MinProtocolVersion && v <= ProtocolVersion }

// Type is the tag that says which message a frame carries (its second byte).
type Type uint8

// The message tags. Zero is never a valid tag, so an all-zero frame is refused.
// Tags are part of the wire format: never renumber one.
const (
	// TypeRecords tags *Records.
	TypeRecords Type = 1
	// TypeRenewals tags *Renewals.
	TypeRenewals Type = 2
	// TypeDigest tags *Digest.
	TypeDigest Type = 3
	// TypeSyncRequest tags *SyncRequest.
	TypeSyncRequest Type = 4
	// TypeLoad tags *Load.
	TypeLoad Type = 5
	// TypeHandoff tags *Handoff (version 4 and later).
	TypeHandoff Type = 6
)

var typeNames = [...]string{"", "records", "renewals", "digest", "sync-request", "load", "handoff"}

// Since is the first protocol version that has tag t.
func (t Type) Since() uint8 {
	if t == TypeHandoff {
		return 4
	}
	return 1
}

// String returns a short lower-case name of the tag, for logs and metrics.
func (t Type) String() string {
	if int(t) < len(typeNames) && t != 0 {
		return typeNames[t]
	}
	return "unknown"
}

// Message is one node-to-node message: *Records, *Renewals, *Digest,
// *SyncRequest, *Load or *Handoff. Decode returns exactly these pointer types, so a receiver can
// dispatch with one type switch.
type Message interface {
	// Type returns the tag the message is framed with.
	Type() Type
}

// InstanceRecord is the replicated state of one instance at one version. It is
// not a Message on its own: a single change travels as a Records batch of one,
// which costs one byte more and keeps a single receive path.
//
// Records of the same App/ID are ordered by (Clock, Node), the same order as
// the registry's Version; a receiver keeps the greater one.
type InstanceRecord struct {
	_msgpack struct{} `msgpack:",as_array"`

	// App is the upper-case application name.
	App string
	// ID is the instance's registry id within App.
	ID string
	// Clock is the HLC reading of the change (ms << 16 | logical counter).
	Clock uint64
	// Node is the name of the node that made the change (the tie-breaker).
	Node string
	// Deleted marks a tombstone: the instance was cancelled or evicted at
	// this version and must not come back from an older copy.
	Deleted bool
	// Instance is the instance's state; nil for a tombstone.
	Instance *InstanceData
	// Evicted marks a tombstone left by an eviction rather than a cancel:
	// a node whose lease was renewed since refuses it.
	Evicted bool
	// LastRenewal is the sender's last renewal of the lease (epoch ms; 0
	// for a tombstone), so that a copy is never born fresh.
	LastRenewal int64
}

// InstanceData mirrors every field of a registry instance (Eureka's
// InstanceInfo). Strings are as the registry holds them, "" standing for
// Java's null; timestamps are epoch milliseconds, 0 meaning unset.
type InstanceData struct {
	_msgpack struct{} `msgpack:",as_array"`

	InstanceID       string
	HostName         string
	App              string
	IPAddr           string
	SID              string
	Status           string
	OverriddenStatus string
	Port             PortData
	SecurePort       PortData
	CountryID        int
	DataCenterInfo   DataCenterData
	LeaseInfo        LeaseData
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
	ActionType                    string
	ASGName                       string
}

// PortData is a port number and whether it is enabled.
type PortData struct {
	_msgpack struct{} `msgpack:",as_array"`

	Number  int
	Enabled bool
}

// DataCenterData says where an instance runs: the Java class marker, the
// data-center name ("MyOwn", "Amazon") and, for Amazon, its metadata.
type DataCenterData struct {
	_msgpack struct{} `msgpack:",as_array"`

	Class    string
	Name     string
	Metadata map[string]string
}

// LeaseData is the lease part of an instance: intervals in seconds,
// timestamps in epoch milliseconds (0 = unset).
type LeaseData struct {
	_msgpack struct{} `msgpack:",as_array"`

	RenewalIntervalSecs   int
	DurationSecs          int
	RegistrationTimestamp int64
	LastRenewalTimestamp  int64
	EvictionTimestamp     int64
	ServiceUpTimestamp    int64
}

// Records is a batch of instance records: the fan-out of registry events to
// every member, and the answer to a SyncRequest during anti-entropy.
type Records struct {
	_msgpack struct{} `msgpack:",as_array"`

	Records []InstanceRecord
	// Done lists the applications whose anti-entropy transfer this
	// message completes (empty for ordinary fan-out).
	Done []string
	// SentAt is the sender's wall clock when it sent the batch (epoch ms):
	// the receiver reads the records' times (last renewals, versions'
	// HLC times) as ages on the sender's clock, so that two nodes whose
	// clocks disagree still agree on how old a copy is.
	SentAt int64
}

// Type returns TypeRecords.
func (*Records) Type() Type { return TypeRecords }

// Renewal says that an instance renewed its lease Count times since the last
// batch that carried it (renewals are coalesced before they are forwarded).
type Renewal struct {
	_msgpack struct{} `msgpack:",as_array"`

	App string
	ID  string
	// Count is how many renewals of the instance were coalesced into this
	// one. The owner refreshes the lease once whatever the count, and does
	// not count them for self-preservation: the member the client sent them
	// to has counted each already (see cluster/load.go). It is kept for
	// diagnostics (a count far above one flush interval's worth points at
	// a misbehaving client).
	Count uint32
}

// Renewals is a batch of renewals forwarded to the owner of their
// applications, so that a heartbeat costs one message, not one per member.
type Renewals struct {
	_msgpack struct{} `msgpack:",as_array"`

	Renewals []Renewal
}

// Type returns TypeRenewals.
func (*Renewals) Type() Type { return TypeRenewals }

// AppDigest summarises one application's records on the sender: a hash over
// its records' keys and versions (tombstones included) and their count.
type AppDigest struct {
	_msgpack struct{} `msgpack:",as_array"`

	App   string
	Hash  uint64
	Count uint32
}

// Digest is the sender's summary of its registry, one entry per application,
// exchanged in push/pull anti-entropy. A receiver compares it with its own and
// asks, with a SyncRequest, for the applications that differ.
type Digest struct {
	_msgpack struct{} `msgpack:",as_array"`

	// Node is the sender's node name, so the receiver knows whom to ask.
	Node string
	Apps []AppDigest
	// Reply asks the receiver to answer with its own digest.
	Reply bool
}

// Type returns TypeDigest.
func (*Digest) Type() Type { return TypeDigest }

// SyncRequest asks the receiver for the records of the listed applications
// that the sender lacks: for each application the sender lists the version of
// every record it holds (tombstones included), and the receiver answers with
// one or more Records messages holding only its records that are newer or
// missing from that list. So a transfer moves what differs, not whole
// applications.
type SyncRequest struct {
	_msgpack struct{} `msgpack:",as_array"`

	// Node is the sender's node name: memberlist does not tell a receiver
	// who sent a message, and the answer has to go back to it.
	Node string
	// Apps are the applications the sender wants, with what it holds.
	Apps []SyncApp
}

// Type returns TypeSyncRequest.
func (*SyncRequest) Type() Type { return TypeSyncRequest }

// SyncApp is one application of a SyncRequest and the versions of the
// records the asker holds for it.
type SyncApp struct {
	_msgpack struct{} `msgpack:",as_array"`

	// App is the upper-case application name.
	App string
	// Have lists the asker's records of App.
	Have []RecordVersion
}

// RecordVersion is one record's id and version.
type RecordVersion struct {
	_msgpack struct{} `msgpack:",as_array"`

	ID    string
	Clock uint64
	Node  string
}

// Load is a member's renewal report, sent to every other member once per
// renewal window: the client renewals it counted in its last complete
// window, so that each member can weigh self-preservation on the
// cluster-wide figures, and the decision it took, for operators.
type Load struct {
	_msgpack struct{} `msgpack:",as_array"`

	// Node is the sender's node name.
	Node string
	// WindowMillis is the length of the sender's counting window.
	WindowMillis int64
	// Renewals is what clients renewed or registered on the sender in its
	// last complete window.
	Renewals int64
	// Expected is the sender's expected number of renewing clients.
	Expected int64
	// Engaged reports whether the sender's self-preservation is engaged.
	Engaged bool
	// Reason is the sender's plain-language reason for its decision.
	Reason string
	// Alive lists the members alive in the sender's view, itself included,
	// sorted: where it forwards renewals and what it thinks each member
	// owns. From version 5 on; nil from an older sender (unknown).
	Alive []string
}

// Type returns TypeLoad.
func (*Load) Type() Type { return TypeLoad }

// Handoff passes the leases of applications from their owner to the member
// that owns them next (a member joined, or the sender is leaving): for each
// lease, how long ago the sender last saw it renewed. The new owner has
// not seen the renewals that reached the old one, so without the ages it
// grants every lease a whole lease of grace, and a client that died just
// before the move stays listed that much longer. Ages, not times, so that
// the two clocks need not agree.
type Handoff struct {
	_msgpack struct{} `msgpack:",as_array"`
	// Node is the sender's node name.
	Node string
	// Apps are the applications handed over.
	Apps []HandoffApp
	// Leaving says that the sender hands over because it is leaving
	// gracefully: it sends one to every member, with or without
	// applications, so that each keeps its last renewal report fading out
	// as a departed member's (its clients move to the others), even if
	// it comes back before they see it leave.
	Leaving bool
}

// Type returns TypeHandoff.
func (*Handoff) Type() Type { return TypeHandoff }

// HandoffApp is one application of a Handoff.
type HandoffApp struct {
	_msgpack struct{} `msgpack:",as_array"`
	// App is the upper-case application name.
	App string
	// Leases are its live leases on the sender.
	Leases []LeaseAge
}

// LeaseAge is one lease's time since its last renewal on the sender.
type LeaseAge struct {
	_msgpack struct{} `msgpack:",as_array"`
	// ID is the instance's registry id.
	ID string
	// AgeMillis is how long before the send the lease was last renewed
	// (or registered), in milliseconds, never negative.
	AgeMillis int64
}
