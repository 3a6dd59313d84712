package actors

// Version orders the changes to one instance record across the cluster. It is
// a hybrid logical clock reading (see HLC) plus the name of the node that made
// the change, so every node sorts any two versions the same way. The zero
// Version sorts before every real one.
type Version struct {
	// Clock is an HLC reading: wall-clock milliseconds << 16 | logical counter.
	Clock uint64
	// Node is the name of the node that made the change (the tie-breaker).
	Node string
}

// Less reports whether v orders before o.
func (v Version) Less(o Version) bool {
	if v.Clock != o.Clock {
		return v.Clock < o.Clock
	}
	return v.Node < o.Node
}

// IsZero reports whether v is the zero Version.
func (v Version) IsZero() bool { return v.Clock == 0 && v.Node == "" }

// Cause says which operation produced an event.
type Cause uint8

// The operations that change the registry.
const (
	CauseRegister Cause = iota + 1
	CauseCancel
	CauseEvict
	CauseStatusUpdate
	CauseDeleteOverride
	CauseMetadata
	// CauseRefuseStale is the eviction tombstone with which a node answers a
	// stale copy it refused (see Record). It deletes nothing on the node
	// that made it, which never held the instance.
	CauseRefuseStale
	// CauseRefuseLate is the cancel tombstone with which a node answers a
	// live record that its cancel outranks (a registration sent before
	// the cancel and served late, see appState.cancelOutranks). Like
	// CauseRefuseStale it deletes nothing on the node that made it.
	CauseRefuseLate
)

var causeNames = [...]string{"", "register", "cancel", "evict", "status-update", "delete-override", "metadata", "refuse-stale",
	"refuse-late"}

// String returns a short lower-case name of the cause.
func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "unknown"
}

// Event is one change to the registry, emitted by the application actor that
// made it, after the change is applied. Instance is the new immutable state;
// for ActionDeleted it is the last state with LeaseInfo.EvictionTimestamp set.
type Event struct {
	Action   ActionType
	Cause    Cause
	Instance *Instance
	Version  Version
	// Replicated is true when the change came from a Heureka peer's record,
	// so the cluster layer must not send it on again. A change relayed by a
	// Eureka peer (POST /peerreplication/batch) is not Replicated: the other
	// Heureka members still need it.
	Replicated bool
	// NewLease is true when the change created a lease that did not exist
	// (self-preservation counts these).
	NewLease bool
	// LeaseExpired is true for a new lease copied from a peer whose client
	// evidence (its last registration or renewal, as the sender knows it)
	// is older than the lease: the copy of a client that is gone, or whose
	// renewals went to other members (self-preservation's measured leases).
	LeaseExpired bool
}

// Key returns the registry key of the instance the event is about.
func (e *Event) Key() Key { return e.Instance.Key() }
