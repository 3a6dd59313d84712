package eureka

// Peer replication batches (POST peerreplication/batch, spec §5.3): the
// request is {"replicationList":[item,…]}, the response
// {"responseList":[{"statusCode":N[,"responseEntity":{instance}]},…]}, one
// response per item in order. Java peers only ever send JSON, so there is no
// XML form.

import (
	"strconv"
	"strings"

	"github.com/heureka/heureka/actors"
)

// Replication actions a Java peer sends in ReplicationItem.Action.
const (
	ReplicationRegister             = "Register"
	ReplicationHeartbeat            = "Heartbeat"
	ReplicationCancel               = "Cancel"
	ReplicationStatusUpdate         = "StatusUpdate"
	ReplicationDeleteStatusOverride = "DeleteStatusOverride"
)

// ReplicationItem is one entry of a peer's replication batch: the REST call
// the peer made locally, to be replayed here as a replica.
type ReplicationItem struct {
	// AppName is the application name as sent (Java peers send it upper
	// case; the caller upper-cases it like a path parameter).
	AppName string
	// ID is the instance id.
	ID string
	// Action is one of the Replication* constants, as sent; anything else
	// is the caller's to reject.
	Action string
	// LastDirtyTimestamp is the sender's lastDirtyTimestamp in epoch
	// milliseconds, nil when absent (Cancel items carry none).
	LastDirtyTimestamp *int64
	// Status is the sender's status of the instance, or the status to set
	// (StatusUpdate) or to restore (DeleteStatusOverride); raw, "" when
	// absent.
	Status string
	// OverriddenStatus is the sender's override (Heartbeat only), raw, ""
	// when absent. The legacy key overriddenstatus is accepted too.
	OverriddenStatus string
	// Instance is the full instance for Register items (instanceInfo), nil
	// otherwise. It is decoded as DecodeInstance would and is NOT
	// normalized.
	Instance *actors.Instance
}

// DecodeReplicationList decodes a peer replication batch body (JSON). An
// absent or null replicationList is an empty batch. Any item that cannot be
// decoded (an item that is not an object, a field of the wrong type, an
// undecodable instanceInfo) fails the whole batch with an error wrapping
// ErrBadBody, as a Java server fails to deserialize it.
func DecodeReplicationList(body []byte) ([]ReplicationItem, error) {
	v, err := parseJSON(trimBOM(body))
	if err != nil {
		return nil, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return nil, badBody("replication batch is not a JSON object")
	}
	var list []any
	switch l := top["replicationList"].(type) {
	case nil:
		return nil, nil
	case []any:
		list = l
	case map[string]any:
		// Jackson's ACCEPT_SINGLE_VALUE_AS_ARRAY: one item without the array.
		list = []any{l}
	default:
		return nil, badBody("replicationList: want an array, got %s", jsonKind(l))
	}
	items := make([]ReplicationItem, 0, len(list))
	for i, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, badBody("replicationList[%d]: want an object, got %s", i, jsonKind(e))
		}
		r := jsonFields{obj: obj}
		it := ReplicationItem{
			AppName: r.str("appName"),
			ID:      r.str("id"),
			Action:  r.str("action"),
			Status:  r.str("status"),
		}
		osKey := "overriddenStatus"
		if obj[osKey] == nil {
			osKey = "overriddenstatus"
		}
		it.OverriddenStatus = r.str(osKey)
		if ts, ok := obj["lastDirtyTimestamp"]; ok && ts != nil && ts != "" {
			n := r.int64("lastDirtyTimestamp")
			it.LastDirtyTimestamp = &n
		}
		if ii := r.object("instanceInfo"); ii != nil && r.err == nil {
			inst, err := instanceFromJSON(ii)
			if err != nil {
				return nil, badBody("replicationList[%d].instanceInfo: %v", i, unwrapBadBody(err))
			}
			it.Instance = inst
		}
		if r.err != nil {
			return nil, badBody("replicationList[%d]: %v", i, unwrapBadBody(r.err))
		}
		items = append(items, it)
	}
	return items, nil
}

// unwrapBadBody strips the ErrBadBody prefix from err's message so that
// nested errors read once.
func unwrapBadBody(err error) string {
	return strings.TrimPrefix(err.Error(), ErrBadBody.Error()+": ")
}

// ReplicationResponse is the outcome of one replication item.
type ReplicationResponse struct {
	// StatusCode is the HTTP status the equivalent REST call would have
	// returned (200, 404, 409, 500, …).
	StatusCode int
	// Entity is the receiver's copy of the instance, sent back as
	// responseEntity (with a 409 heartbeat); nil for none.
	Entity *actors.Instance
}

// AppendReplicationResponses appends the batch response document
// {"responseList":[…]}, one entry per item in order; responseEntity is the
// full JSON instance, unwrapped.
func AppendReplicationResponses(dst []byte, rs []ReplicationResponse) []byte {
	dst = append(dst, `{"responseList":[`...)
	for i := range rs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"statusCode":`...)
		dst = strconv.AppendInt(dst, int64(rs[i].StatusCode), 10)
		if rs[i].Entity != nil {
			dst = append(dst, `,"responseEntity":`...)
			dst = appendInstanceJSON(dst, rs[i].Entity)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}
