package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
)

// The in-process parts of a request, without HTTP or the load generator:
// used by the benchmarks to split a scenario's server-side cost.

// discardWriter is an http.ResponseWriter that keeps nothing.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// Part is one in-process operation. New returns one worker's operation.
type Part struct {
	Name string
	New  func(f *Fixture, worker int) func() error
}

// sample returns n loaded instances spread over the registry.
func sample(f *Fixture, n int) []Instance {
	if n > f.Size {
		n = f.Size
	}
	out := make([]Instance, n)
	for k := range out {
		out[k] = InstanceAt(k * f.Size / n)
	}
	return out
}

type statusError int

func (e statusError) Error() string { return "bench: unexpected status " + http.StatusText(int(e)) }

// serveDirect calls the node's handler with a synthetic request.
func serveDirect(h http.Handler, method, target string, body []byte, hdr http.Header, want int) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://bench"+target, r)
	if err != nil {
		return err
	}
	req.Header = hdr
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, req)
	if w.code != want {
		return statusError(w.code)
	}
	return nil
}

// Parts are the operations behind renew and register, from the whole
// handler down to its pieces.
var Parts = []Part{
	{Name: "handler-renew", New: func(f *Fixture, worker int) func() error {
		insts := sample(f, 1000)
		hdr := javaHeaders("application/json", true)
		h := f.Node.Handler()
		i := worker * 7919
		return func() error {
			i++
			in := insts[i%len(insts)]
			return serveDirect(h, http.MethodPut, "/eureka/apps/"+in.App+"/"+in.ID+"?status=UP&lastDirtyTimestamp="+lastDirtyStr, nil, hdr, http.StatusOK)
		}
	}},
	{Name: "registry-renew", New: func(f *Fixture, worker int) func() error {
		insts := sample(f, 1000)
		reg := f.Node.Registry()
		ts := LastDirty
		i := worker * 7919
		return func() error {
			i++
			in := insts[i%len(insts)]
			res, err := reg.Renew(context.Background(), actors.RenewRequest{App: in.App, ID: in.ID, LastDirtyTimestamp: &ts})
			if err == nil && res.Outcome != actors.RenewOK {
				return statusError(http.StatusNotFound)
			}
			return err
		}
	}},
	{Name: "handler-register", New: func(f *Fixture, worker int) func() error {
		insts := sample(f, 1000)
		hdr := javaHeaders("application/json", true)
		hdr["Content-Type"] = []string{"application/json"}
		h := f.Node.Handler()
		i := worker * 7919
		return func() error {
			i++
			in := insts[i%len(insts)]
			return serveDirect(h, http.MethodPost, "/eureka/apps/"+in.App, AppendRegisterBody(make([]byte, 0, 1400), in), hdr, http.StatusNoContent)
		}
	}},
	{Name: "decode", New: func(f *Fixture, worker int) func() error {
		body := AppendRegisterBody(nil, InstanceAt(worker%f.Size))
		return func() error {
			inst, err := eureka.DecodeInstance("application/json", body)
			if err == nil {
				inst.Normalize()
			}
			return err
		}
	}},
	{Name: "registry-register", New: func(f *Fixture, worker int) func() error {
		var decoded []*actors.Instance
		for _, in := range sample(f, 1000) {
			inst, err := eureka.DecodeInstance("application/json", AppendRegisterBody(nil, in))
			if err != nil {
				panic(err)
			}
			inst.Normalize()
			decoded = append(decoded, inst)
		}
		reg := f.Node.Registry()
		i := worker * 7919
		return func() error {
			i++
			return reg.Register(context.Background(), decoded[i%len(decoded)], false)
		}
	}},
}
