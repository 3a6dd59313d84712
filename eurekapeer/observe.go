package eurekapeer

import (
	"context"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
)

// Observe wraps the registry the HTTP API writes through so that every
// successful write of one of this node's clients (replicated false) is
// noted in s. Writes marked replicated (a Eureka peer's batch or a request
// with the replication header) pass through unnoted: they are never echoed
// back to Eureka peers. Reads and the other methods pass through.
func Observe(inner actors.API, s *Sender) actors.API {
	return &observed{API: inner, s: s}
}

// fromClient reports whether a write was a client's: not marked
// replicated. The eurekapeer-echo sabotage switch takes every write for a
// client's, echoing what Eureka peers sent.
func fromClient(replicated bool) bool {
	return !replicated || sabotage.On(sabotage.EurekaPeerEcho)
}

type observed struct {
	actors.API
	s *Sender
}

func (o *observed) Register(ctx context.Context, inst *actors.Instance, replicated bool) error {
	err := o.API.Register(ctx, inst, replicated)
	if err == nil && fromClient(replicated) {
		o.s.Registered(inst.App, inst.ID())
	}
	return err
}

func (o *observed) Renew(ctx context.Context, req actors.RenewRequest) (actors.RenewResult, error) {
	res, err := o.API.Renew(ctx, req)
	if err == nil && fromClient(req.Replicated) && res.Outcome == actors.RenewOK {
		o.s.Renewed(req.App, req.ID)
	}
	return res, err
}

func (o *observed) Cancel(ctx context.Context, app, id string, replicated bool) (bool, error) {
	ok, err := o.API.Cancel(ctx, app, id, replicated)
	if ok && err == nil && fromClient(replicated) {
		o.s.Cancelled(app, id)
	}
	return ok, err
}

func (o *observed) SetStatus(ctx context.Context, app, id string, st actors.Status, lastDirty *int64, replicated bool) (bool, error) {
	ok, err := o.API.SetStatus(ctx, app, id, st, lastDirty, replicated)
	if ok && err == nil && fromClient(replicated) {
		o.s.StatusUpdated(app, id, st)
	}
	return ok, err
}

func (o *observed) DeleteOverride(ctx context.Context, app, id string, st actors.Status, lastDirty *int64, replicated bool) (bool, error) {
	ok, err := o.API.DeleteOverride(ctx, app, id, st, lastDirty, replicated)
	if ok && err == nil && fromClient(replicated) {
		o.s.OverrideDeleted(app, id, st)
	}
	return ok, err
}

// UpdateMetadata is sent as a registration carrying the new metadata (Java
// peers replicate no metadata update of their own).
func (o *observed) UpdateMetadata(ctx context.Context, app, id string, kv map[string]string, replicated bool) (bool, error) {
	ok, err := o.API.UpdateMetadata(ctx, app, id, kv, replicated)
	if ok && err == nil && fromClient(replicated) {
		o.s.Registered(app, id)
	}
	return ok, err
}
