package httpapi

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/internal/sabotage"
)

// errBodyTooLarge is returned when a request body exceeds MaxBodyBytes.
var errBodyTooLarge = errors.New("httpapi: request body too large")

// readBody reads a request body, inflating it when Content-Encoding is gzip,
// and enforces MaxBodyBytes on the decoded size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return s.readBodyTo(w, r, nil)
}

// bodyBuffers recycles registration bodies (*[]byte): the decoders copy
// what they keep, so a body's memory is free once it is decoded. Buffers
// that grew beyond maxPooledBody are left to the collector.
var bodyBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 4096)
	return &b
}}

// maxPooledBody is the largest body buffer bodyBuffers keeps.
const maxPooledBody = 64 << 10

// readBodyTo is readBody appending to dst.
func (s *Server) readBodyTo(w http.ResponseWriter, r *http.Request, dst []byte) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	enc := strings.ToLower(strings.TrimSpace(headerValue(r.Header, "Content-Encoding")))
	if (enc == "" || enc == "identity") && r.ContentLength >= 0 {
		// A plain body of a declared length, what clients send: net/http
		// reads no more than the length, so the size is checked once, here,
		// without the limiting readers.
		if r.ContentLength > limit {
			return nil, &httpError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", limit)}
		}
		// Room for the declared length (up to a pooled buffer's: a client
		// that declares more must send it before it is given more) and
		// one byte, so that the read that sees the end does not grow it.
		dst = slices.Grow(dst, int(min(r.ContentLength, maxPooledBody))+1)
		body, err := readAll(dst, r.Body)
		if err != nil {
			return nil, badRequest("cannot read request body: " + err.Error())
		}
		return body, nil
	}
	var src io.Reader = http.MaxBytesReader(w, r.Body, limit)
	switch enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, badRequest("cannot parse request body: bad gzip data")
		}
		defer zr.Close()
		src = zr
	default:
		return nil, &httpError{code: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("unsupported Content-Encoding %q", enc)}
	}
	body, err := readAll(dst, io.LimitReader(src, limit+1))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr) || int64(len(body)) > limit:
		return nil, &httpError{code: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("request body exceeds %d bytes", limit)}
	case err != nil:
		return nil, badRequest("cannot read request body: " + err.Error())
	}
	return body, nil
}

// readAll is io.ReadAll appending to dst.
func readAll(dst []byte, src io.Reader) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)] // grow
		}
		n, err := src.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return dst, err
		}
	}
}

// validateRegistration applies Eureka's register checks in order (spec §2
// Register) and fills an Amazon instance-id that is missing.
func validateRegistration(inst *actors.Instance, pathApp string) error {
	switch {
	case strings.TrimSpace(inst.ID()) == "":
		return badRequest("Missing instanceId")
	case strings.TrimSpace(inst.HostName) == "":
		return badRequest("Missing hostname")
	case strings.TrimSpace(inst.IPAddr) == "":
		return badRequest("Missing ip address")
	case strings.TrimSpace(inst.App) == "":
		return badRequest("Missing appName")
	case inst.App != pathApp:
		return badRequest(fmt.Sprintf("Mismatched appName, expecting %s but was %s", pathApp, inst.App))
	case inst.DataCenterInfo.Name == "" && inst.DataCenterInfo.Class == "":
		return badRequest("Missing dataCenterInfo")
	case inst.DataCenterInfo.Name == "":
		return badRequest("Missing dataCenterInfo Name")
	// Not Eureka's: names that no path can address (see checkPathValues).
	case strings.Contains(inst.App, "/"):
		return badRequest(fmt.Sprintf("app name %s must not contain '/'", jsonString(inst.App)))
	case strings.Contains(inst.ID(), "/"):
		return badRequest(fmt.Sprintf("instance id %s must not contain '/'", jsonString(inst.ID())))
	// Not Eureka's either (it sets no bound): a lease must fit
	// time.Duration, and tombstones are kept as long as the longest lease.
	case inst.LeaseInfo.DurationSecs > actors.MaxLeaseDurationSecs && !sabotage.On(sabotage.LeaseDurationUnbounded):
		return badRequest(fmt.Sprintf("leaseInfo.durationInSecs %d exceeds the maximum of %d (one day)",
			inst.LeaseInfo.DurationSecs, actors.MaxLeaseDurationSecs))
	}
	if inst.DataCenterInfo.Name == "Amazon" && inst.DataCenterInfo.Metadata[actors.AmazonInstanceIDKey] == "" {
		if inst.DataCenterInfo.Metadata == nil {
			inst.DataCenterInfo.Metadata = map[string]string{}
		}
		inst.DataCenterInfo.Metadata[actors.AmazonInstanceIDKey] = inst.ID()
	}
	return nil
}

// skewSource is a registry that can tell whether this node's clock is
// behind its peers' (actors.Registry).
type skewSource interface{ HLC() *actors.HLC }

// refusedForSkew answers 503 and reports true when this node's clock is
// behind its peers' by more than the HLC tolerance (actors.HLC.Skew): a
// write taken here would be stamped in the others' past (a cancel's
// tombstone older than the TTL elsewhere, a registration that sorts below
// the changes made before it), so clients are sent to another node, as
// Eureka clients fail over on a 5xx. The change is logged once each way.
func (s *Server) refusedForSkew(w http.ResponseWriter, r *http.Request) bool {
	src, ok := s.cfg.Registry.(skewSource)
	if !ok {
		return false
	}
	st, changed := src.HLC().CheckSkew()
	if changed {
		if st.Behind {
			s.log.Error("clock skew: refusing writes with 503 so that clients fail over", "reason", st.Reason,
				"peers", st.Peers, "ahead", st.Ahead, "lead", st.Lead)
		} else {
			s.log.Info("clock skew cleared: taking writes again", "reason", st.Reason)
		}
	}
	if !st.Behind {
		return false
	}
	w.Header().Set("Retry-After", "10")
	writeText(w, http.StatusServiceUnavailable, "clock skew: "+st.Reason)
	return true
}

func (s *Server) register(w http.ResponseWriter, r *http.Request, p params) {
	if s.refusedForSkew(w, r) {
		return
	}
	buf := bodyBuffers.Get().(*[]byte)
	body, err := s.readBodyTo(w, r, (*buf)[:0])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	inst, err := eureka.DecodeInstance(headerValue(r.Header, "Content-Type"), body)
	if cap(body) <= maxPooledBody {
		*buf = body[:0]
		bodyBuffers.Put(buf)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	inst.Normalize()
	if err := validateRegistration(inst, p.appName()); err != nil {
		s.fail(w, r, err)
		return
	}
	// inst was decoded for this request alone: a registry that can store
	// it without a copy (actors.Registry.RegisterOwned) is given it.
	if o, ok := s.cfg.Registry.(ownedRegistry); ok {
		err = o.RegisterOwned(r.Context(), inst, replicated(r))
	} else {
		err = s.cfg.Registry.Register(r.Context(), inst, replicated(r))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent) // the Java client accepts only 204
}

// ownedRegistry is a Registry that can take an instance nothing else holds
// without copying it (actors.Registry is one). A wrapper that embeds the
// Registry interface does not offer it, so its Register still sees every
// registration.
type ownedRegistry interface {
	RegisterOwned(ctx context.Context, inst *actors.Instance, replicated bool) error
}

// optionalTimestamp parses an optional epoch-millisecond query parameter.
func optionalTimestamp(q url.Values, name string) (*int64, error) {
	return parseTimestamp(name, q.Get(name))
}

// parseTimestamp parses v, the value of the epoch-millisecond query
// parameter name; "" is absent (nil).
func parseTimestamp(name, v string) (*int64, error) {
	if v == "" {
		return nil, nil
	}
	ts, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, badRequest(fmt.Sprintf("%s must be epoch milliseconds, got %q", name, v))
	}
	return &ts, nil
}

func (s *Server) renew(w http.ResponseWriter, r *http.Request, p params) {
	if s.refusedForSkew(w, r) {
		return
	}
	req := actors.RenewRequest{App: p.appName(), ID: p.id, Replicated: replicated(r)}
	if r.URL.RawQuery != "" {
		dirty, overridden := renewQuery(r.URL.RawQuery)
		var err error
		if req.LastDirtyTimestamp, err = parseTimestamp("lastDirtyTimestamp", dirty); err != nil {
			s.fail(w, r, err)
			return
		}
		if overridden != "" {
			req.OverriddenStatus = actors.LenientStatus(overridden)
		}
	}
	res, err := s.cfg.Registry.Renew(r.Context(), req)
	if err == nil && res.Outcome == actors.RenewNotFound && s.waitReady(r) {
		// Unknown before the initial sync ended: the instance may be on
		// its way from the members (a restarted node); ask again.
		res, err = s.cfg.Registry.Renew(r.Context(), req)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch res.Outcome {
	case actors.RenewOK:
		w.WriteHeader(http.StatusOK) // no entity: Jersey parses any body
	case actors.RenewNotFound:
		w.WriteHeader(http.StatusNotFound)
	case actors.RenewConflict:
		f := entityFormat(r)
		writeEntity(w, http.StatusConflict, f, eureka.AppendInstanceDocument(nil, f, res.Instance))
	}
}

// renewQuery returns the lastDirtyTimestamp and overriddenstatus
// parameters of a renewal's query, as url.ParseQuery and Values.Get read
// them (the first occurrence of each, "" when absent). A query with nothing
// to unescape (no '%' or '+') and no ';' (which ParseQuery refuses) is
// split in place; the Java client's "status=UP&lastDirtyTimestamp=…" is.
func renewQuery(raw string) (lastDirty, overridden string) {
	if strings.ContainsAny(raw, "%+;") {
		q, _ := url.ParseQuery(raw)
		return q.Get("lastDirtyTimestamp"), q.Get("overriddenstatus")
	}
	var seenDirty, seenOverridden bool
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		switch {
		case key == "lastDirtyTimestamp" && !seenDirty:
			lastDirty, seenDirty = value, true
		case key == "overriddenstatus" && !seenOverridden:
			overridden, seenOverridden = value, true
		}
	}
	return lastDirty, overridden
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request, p params) {
	if s.refusedForSkew(w, r) {
		return
	}
	ok, err := s.cfg.Registry.Cancel(r.Context(), p.appName(), p.id, replicated(r))
	s.answer(w, r, ok, err)
}

// answer writes 200 for ok, 404 for not found, or the error.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, ok bool, err error) {
	switch {
	case err != nil:
		s.fail(w, r, err)
	case ok:
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// statusParam parses the value parameter of the status endpoints: an exact
// upper-case status name. required says whether it may be absent (then
// UNKNOWN).
func statusParam(q url.Values, required bool) (actors.Status, error) {
	v := q.Get("value")
	if v == "" {
		if required {
			return "", badRequest("missing status value (value=UP|DOWN|STARTING|OUT_OF_SERVICE|UNKNOWN)")
		}
		return actors.StatusUnknown, nil
	}
	st, ok := actors.ParseStatus(v)
	if !ok {
		return "", badRequest(fmt.Sprintf("unknown status value %q (want UP, DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN)", v))
	}
	return st, nil
}

func (s *Server) setStatus(w http.ResponseWriter, r *http.Request) {
	s.statusChange(w, r, false)
}

func (s *Server) deleteStatus(w http.ResponseWriter, r *http.Request) {
	s.statusChange(w, r, true)
}

func (s *Server) statusChange(w http.ResponseWriter, r *http.Request, remove bool) {
	if s.refusedForSkew(w, r) {
		return
	}
	q := r.URL.Query()
	st, err := statusParam(q, !remove)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	dirty, err := optionalTimestamp(q, "lastDirtyTimestamp")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var ok bool
	if remove {
		ok, err = s.cfg.Registry.DeleteOverride(r.Context(), appName(r), r.PathValue("id"), st, dirty, replicated(r))
	} else {
		ok, err = s.cfg.Registry.SetStatus(r.Context(), appName(r), r.PathValue("id"), st, dirty, replicated(r))
	}
	s.answer(w, r, ok, err)
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	if s.refusedForSkew(w, r) {
		return
	}
	kv := map[string]string{}
	for k, vs := range r.URL.Query() {
		if k == "" || k == "@class" {
			continue
		}
		// Bodies must be UTF-8 (eureka.ErrInvalidUTF8); so must metadata sent
		// in the query (%FF), or the encoders would store U+FFFD.
		if !utf8.ValidString(k) || !utf8.ValidString(vs[0]) {
			s.fail(w, r, badRequest(fmt.Sprintf("metadata %s=%s is not valid UTF-8", jsonString(k), jsonString(vs[0]))))
			return
		}
		kv[k] = vs[0]
	}
	ok, err := s.cfg.Registry.UpdateMetadata(r.Context(), appName(r), r.PathValue("id"), kv, replicated(r))
	s.answer(w, r, ok, err)
}

func (s *Server) asgStatus(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, badRequest("ASG status is only supported by an AWS registry; this registry has no ASGs"))
}

// batch applies a Eureka peer's replication batch (spec §5.3): items in
// order, one response per item; the batch itself is 200 unless it cannot be
// read.
func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	items, err := eureka.DecodeReplicationList(body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]eureka.ReplicationResponse, len(items))
	for i, it := range items {
		out[i] = s.batchItem(r, it)
	}
	writeEntity(w, http.StatusOK, 0, eureka.AppendReplicationResponses(nil, out))
}

func (s *Server) batchItem(r *http.Request, it eureka.ReplicationItem) eureka.ReplicationResponse {
	ctx := r.Context()
	app := strings.ToUpper(it.AppName)
	code := func(ok bool, err error) eureka.ReplicationResponse {
		switch {
		case err != nil:
			return eureka.ReplicationResponse{StatusCode: http.StatusInternalServerError}
		case ok:
			return eureka.ReplicationResponse{StatusCode: http.StatusOK}
		}
		return eureka.ReplicationResponse{StatusCode: http.StatusNotFound}
	}
	switch it.Action {
	case eureka.ReplicationRegister:
		if it.Instance != nil {
			it.Instance.Normalize()
			if validateRegistration(it.Instance, app) == nil {
				if err := s.cfg.Registry.Register(ctx, it.Instance, true); err != nil {
					return code(false, err)
				}
			}
		}
		return eureka.ReplicationResponse{StatusCode: http.StatusOK} // Eureka always says 200
	case eureka.ReplicationHeartbeat:
		res, err := s.cfg.Registry.Renew(ctx, actors.RenewRequest{App: app, ID: it.ID,
			LastDirtyTimestamp: it.LastDirtyTimestamp, OverriddenStatus: actors.LenientStatus(it.OverriddenStatus), Replicated: true})
		if err != nil {
			return code(false, err)
		}
		switch res.Outcome {
		case actors.RenewOK:
			return eureka.ReplicationResponse{StatusCode: http.StatusOK}
		case actors.RenewConflict:
			return eureka.ReplicationResponse{StatusCode: http.StatusConflict, Entity: res.Instance}
		}
		return eureka.ReplicationResponse{StatusCode: http.StatusNotFound}
	case eureka.ReplicationCancel:
		return code(s.cfg.Registry.Cancel(ctx, app, it.ID, true))
	case eureka.ReplicationStatusUpdate, eureka.ReplicationDeleteStatusOverride:
		st, ok := actors.ParseStatus(it.Status)
		if !ok && (it.Action == eureka.ReplicationStatusUpdate || it.Status != "") {
			return eureka.ReplicationResponse{StatusCode: http.StatusBadRequest}
		}
		if it.Action == eureka.ReplicationStatusUpdate {
			return code(s.cfg.Registry.SetStatus(ctx, app, it.ID, st, it.LastDirtyTimestamp, true))
		}
		return code(s.cfg.Registry.DeleteOverride(ctx, app, it.ID, st, it.LastDirtyTimestamp, true))
	}
	return eureka.ReplicationResponse{StatusCode: http.StatusBadRequest}
}
