package actors

import "context"

// API is the registry as the HTTP API writes through it and reads single
// instances from (httpapi.Registry). Registry implements it; eurekapeer
// wraps one to note its clients' writes for legacy Eureka peers. Declared
// here, below both, so that neither imports the other.
type API interface {
	Register(ctx context.Context, inst *Instance, replicated bool) error
	Renew(ctx context.Context, req RenewRequest) (RenewResult, error)
	Cancel(ctx context.Context, app, id string, replicated bool) (bool, error)
	SetStatus(ctx context.Context, app, id string, s Status, lastDirty *int64, replicated bool) (bool, error)
	DeleteOverride(ctx context.Context, app, id string, s Status, lastDirty *int64, replicated bool) (bool, error)
	UpdateMetadata(ctx context.Context, app, id string, kv map[string]string, replicated bool) (bool, error)
	Get(ctx context.Context, app, id string) (inst *Instance, expired, ok bool, err error)
	// SelfPreservation is the current self-preservation reading; never nil.
	SelfPreservation() *SelfPreservationStatus
	// SetSelfPreservation switches self-preservation on or off at run time
	// (PUT /admin/self-preservation) and returns once the new state is
	// published, so that SelfPreservation reads it back.
	SetSelfPreservation(ctx context.Context, enabled bool) error
}

var _ API = (*Registry)(nil)
