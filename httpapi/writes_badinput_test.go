package httpapi_test

// Bad input against a live node: every case must get its 4xx with a clear
// message, never a 5xx or a panic, and must leave the registry exactly as it
// was (full registry and delta documents byte-identical, which also pins the
// snapshot version carried by versions__delta).

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

// maxBody is the request body limit of the bad-input node.
const maxBody = 4096

// gzipped compresses b.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}

// registryState is what must not change: the full and delta documents.
func (h *harness) registryState() string {
	h.t.Helper()
	full := h.get("/eureka/apps", ctJSON)
	require.Equal(h.t, http.StatusOK, full.code)
	delta := h.get("/eureka/apps/delta", ctJSON)
	require.Equal(h.t, http.StatusOK, delta.code)
	return string(full.body) + "\n" + string(delta.body)
}

func TestBadInput(t *testing.T) {
	h := startNode(t, func(c *node.Config) { c.MaxBodyBytes = maxBody })
	good := javaInstance("ORDER-SERVICE", 11)
	h.register(good)
	require.Equal(t, http.StatusOK, h.do(http.MethodPut, "/eureka/apps/ORDER-SERVICE/"+good.id()+"/status?value=OUT_OF_SERVICE", nil).code)
	id := good.id()
	inst := "/eureka/apps/ORDER-SERVICE/" + id

	// A new, otherwise valid registration: if a bad request got through,
	// it would show up in the registry.
	fresh := javaInstance("ORDER-SERVICE", 12)
	freshJSON := fresh.json()
	// An undecodable body gets a plain-text 400 like every other, saying
	// what the decoder found (the rest of the message varies with it).
	const parseErr = "cannot parse request body: "
	padded := fresh.with("metadata", map[string]any{"pad": strings.Repeat("x", maxBody)}).json()
	hugeKey := fresh.with("metadata", map[string]any{strings.Repeat("k", maxBody+1): "v"}).json()
	bomb := gzipped([]byte(`{"instance":{"metadata":{"a":"` + strings.Repeat(" ", 2<<20) + `"}}}`))
	require.Less(t, len(bomb), maxBody, "the bomb itself fits the limit")
	validGz := gzipped(freshJSON)
	truncatedGz := validGz[:len(validGz)/2]
	// Invalid UTF-8 (json.Marshal would repair it, so the bytes go in by
	// hand): a host name ending in 0xff, in JSON, XML and a peer batch.
	hostJSON := []byte(`"hostName":"10.0.0.12"`)
	require.True(t, bytes.Contains(freshJSON, hostJSON))
	badUTF8JSON := bytes.Replace(freshJSON, hostJSON, []byte("\"hostName\":\"10.0.0.12\xff\""), 1)
	badUTF8XML := []byte(strings.Replace(fargoXML, "<hostName>xml1.fargo.test</hostName>", "<hostName>xml1.fargo.test\xff</hostName>", 1))
	badUTF8Batch := bytes.Replace(mustJSON(map[string]any{"replicationList": []any{
		map[string]any{"appName": "ORDER-SERVICE", "id": fresh.id(), "action": "Register", "instanceInfo": map[string]any(fresh)},
	}}), hostJSON, []byte("\"hostName\":\"10.0.0.12\xff\""), 1)
	require.NotEqual(t, string(freshJSON), string(badUTF8JSON))
	require.NotEqual(t, fargoXML, string(badUTF8XML))
	utf8At := func(b []byte) string {
		return fmt.Sprintf("cannot parse request body: not valid UTF-8: byte 0xff at offset %d", bytes.IndexByte(b, 0xff))
	}
	slashApp := `app name "BAD/X" must not contain '/' (sent as %2F)`
	slashID := `instance id "a/b" must not contain '/' (sent as %2F)`

	cases := []struct {
		name   string
		method string
		path   string
		body   []byte
		hdr    []string
		code   int
		want   string // exact body, or a substring when contains is set
		// contains makes want a substring.
		contains bool
	}{
		{name: "malformed JSON", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte(`{"instance":{"hostName":"h",`),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "JSON with trailing data", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: append(append([]byte{}, freshJSON...), " {}"...),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "JSON array body", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte("[" + string(freshJSON) + "]"),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "JSON null", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte("null"),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "JSON port as array", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: fresh.with("port", []int{8080}).json(),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "JSON status as number", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: fresh.with("status", 1).json(),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "JSON nested metadata", method: "POST", path: "/eureka/apps/ORDER-SERVICE",
			body: fresh.with("metadata", map[string]any{"a": map[string]any{"b": "c"}}).json(),
			hdr:  []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "malformed XML", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte(`<instance><hostName>h</instance>`),
			hdr: []string{"Content-Type", ctXML}, code: 400, want: parseErr},
		{name: "XML wrong root", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte(`<application><name>X</name></application>`),
			hdr: []string{"Content-Type", ctXML}, code: 400, want: parseErr},
		{name: "XML entity expansion", method: "POST", path: "/eureka/apps/ORDER-SERVICE",
			body: []byte(`<?xml version="1.0"?><!DOCTYPE i [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><instance><hostName>&b;</hostName></instance>`),
			hdr:  []string{"Content-Type", ctXML}, code: 400, want: parseErr},
		{name: "XML non-numeric countryId", method: "POST", path: "/eureka/apps/FARGO-XML",
			body: []byte(strings.Replace(fargoXML, "<countryId>1</countryId>", "<countryId>one</countryId>", 1)),
			hdr:  []string{"Content-Type", ctXML}, code: 400, want: parseErr},
		{name: "text/plain", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: freshJSON,
			hdr: []string{"Content-Type", "text/plain"}, code: 415, want: "unsupported media type", contains: true},
		{name: "form body", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte("a=b"),
			hdr: []string{"Content-Type", "application/x-www-form-urlencoded"}, code: 415, want: "unsupported media type", contains: true},
		{name: "unsupported charset", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: freshJSON,
			hdr: []string{"Content-Type", "application/json; charset=utf-16"}, code: 415, want: `charset "utf-16"`, contains: true},
		{name: "oversized body", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: padded,
			hdr: []string{"Content-Type", ctJSON}, code: 413, want: "request body exceeds 4096 bytes"},
		{name: "invalid gzip", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: freshJSON,
			hdr: []string{"Content-Type", ctJSON, "Content-Encoding", "gzip"}, code: 400, want: "bad gzip data", contains: true},
		{name: "truncated gzip", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: truncatedGz,
			hdr: []string{"Content-Type", ctJSON, "Content-Encoding", "gzip"}, code: 400, want: "cannot read request body", contains: true},
		{name: "gzip bomb", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: bomb,
			hdr: []string{"Content-Type", ctJSON, "Content-Encoding", "gzip"}, code: 413, want: "request body exceeds 4096 bytes"},
		{name: "unsupported Content-Encoding", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: freshJSON,
			hdr: []string{"Content-Type", ctJSON, "Content-Encoding", "br"}, code: 415, want: `unsupported Content-Encoding "br"`},
		{name: "unknown status value", method: "PUT", path: inst + "/status?value=BOGUS", code: 400, want: `unknown status value "BOGUS"`, contains: true},
		{name: "lower-case status value", method: "PUT", path: inst + "/status?value=up", code: 400, want: `unknown status value "up"`, contains: true},
		{name: "missing status value", method: "PUT", path: inst + "/status", code: 400, want: "missing status value", contains: true},
		{name: "unknown status on override delete", method: "DELETE", path: inst + "/status?value=down", code: 400, want: `unknown status value "down"`, contains: true},
		{name: "unknown status in renew is ignored", method: "PUT", path: inst + "?status=BOGUS", code: 200, want: ""},
		{name: "non-numeric lastDirtyTimestamp on renew", method: "PUT", path: inst + "?status=UP&lastDirtyTimestamp=abc", code: 400,
			want: `lastDirtyTimestamp must be epoch milliseconds, got "abc"`},
		{name: "non-numeric lastDirtyTimestamp on status", method: "PUT", path: inst + "/status?value=UP&lastDirtyTimestamp=1e", code: 400,
			want: `lastDirtyTimestamp must be epoch milliseconds, got "1e"`},
		{name: "non-numeric lastDirtyTimestamp on override delete", method: "DELETE", path: inst + "/status?value=UP&lastDirtyTimestamp=x", code: 400,
			want: `lastDirtyTimestamp must be epoch milliseconds, got "x"`},
		{name: "non-numeric lastDirtyTimestamp in body", method: "POST", path: "/eureka/apps/ORDER-SERVICE",
			body: fresh.with("lastDirtyTimestamp", "yesterday").json(), hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "huge metadata key in body", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: hugeKey,
			hdr: []string{"Content-Type", ctJSON}, code: 413, want: "request body exceeds 4096 bytes"},
		{name: "huge metadata key in query", method: "PUT", path: inst + "/metadata?" + strings.Repeat("k", 1<<20+8192) + "=v",
			code: 431, want: "Request Header Fields Too Large", contains: true},
		{name: "app name mismatch", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: fresh.with("app", "user-service").json(),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: "Mismatched appName, expecting ORDER-SERVICE but was USER-SERVICE"},
		{name: "missing hostname", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: fresh.with("hostName", "").json(),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: "Missing hostname"},
		{name: "empty JSON body", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte{},
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "empty XML body", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte{},
			hdr: []string{"Content-Type", ctXML}, code: 400, want: parseErr},
		{name: "empty body without Content-Type", method: "POST", path: "/eureka/apps/ORDER-SERVICE", code: 400, want: parseErr},
		{name: "empty JSON object", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: []byte("{}"),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: "Missing instanceId"},
		{name: "batch malformed", method: "POST", path: "/eureka/peerreplication/batch", body: []byte(`{"replicationList":[`),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "batch is an array", method: "POST", path: "/eureka/peerreplication/batch", body: []byte(`[]`),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		// The first item is valid, the second undecodable: nothing applies.
		{name: "batch with one bad item", method: "POST", path: "/eureka/peerreplication/batch",
			body: mustJSON(map[string]any{"replicationList": []any{
				map[string]any{"appName": "ORDER-SERVICE", "id": fresh.id(), "action": "Register", "instanceInfo": map[string]any(fresh)},
				map[string]any{"appName": "ORDER-SERVICE", "id": id, "action": "Cancel", "lastDirtyTimestamp": "soon"},
			}}),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: parseErr},
		{name: "batch oversized", method: "POST", path: "/eureka/peerreplication/batch", body: padded,
			hdr: []string{"Content-Type", ctJSON}, code: 413, want: "request body exceeds 4096 bytes"},
		{name: "ASG status", method: "PUT", path: "/eureka/asg/my-asg/status?value=ENABLED", code: 400, want: "ASG", contains: true},
		{name: "JSON with invalid UTF-8", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: badUTF8JSON,
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: utf8At(badUTF8JSON)},
		{name: "JSON with invalid UTF-8, labelled utf-8", method: "POST", path: "/eureka/v2/apps/ORDER-SERVICE", body: badUTF8JSON,
			hdr: []string{"Content-Type", ctJSON + "; charset=UTF-8"}, code: 400, want: utf8At(badUTF8JSON)},
		{name: "gzip JSON with invalid UTF-8", method: "POST", path: "/eureka/apps/ORDER-SERVICE", body: gzipped(badUTF8JSON),
			hdr: []string{"Content-Type", ctJSON, "Content-Encoding", "gzip"}, code: 400, want: utf8At(badUTF8JSON)},
		{name: "XML with invalid UTF-8", method: "POST", path: "/eureka/apps/FARGO-XML", body: badUTF8XML,
			hdr: []string{"Content-Type", ctXML}, code: 400, want: utf8At(badUTF8XML)},
		{name: "XML with invalid UTF-8 in a comment", method: "POST", path: "/eureka/apps/FARGO-XML",
			body: []byte(strings.Replace(fargoXML, "<status>", "<!-- \xff --><status>", 1)),
			hdr:  []string{"Content-Type", ctXML}, code: 400, want: "not valid UTF-8: byte 0xff", contains: true},
		{name: "batch with invalid UTF-8", method: "POST", path: "/eureka/peerreplication/batch", body: badUTF8Batch,
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: utf8At(badUTF8Batch)},
		{name: "metadata with invalid UTF-8", method: "PUT", path: inst + "/metadata?owner=%FF", code: 400,
			want: `metadata "owner"="\ufffd" is not valid UTF-8`},
		{name: "app name with invalid UTF-8", method: "POST", path: "/eureka/apps/%FF", body: freshJSON,
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: `app name "\ufffd" is not valid UTF-8`},
		{name: "register with encoded slash", method: "POST", path: "/eureka/apps/BAD%2FX", body: fresh.with("app", "BAD/X").json(),
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: slashApp},
		{name: "register v2 with encoded slash, lower case", method: "POST", path: "/eureka/v2/apps/bad%2fx", body: freshJSON,
			hdr: []string{"Content-Type", ctJSON}, code: 400, want: `app name "bad/x" must not contain '/' (sent as %2F)`},
		{name: "register with a slash in the body's instanceId", method: "POST", path: "/eureka/apps/ORDER-SERVICE",
			body: fresh.with("instanceId", "10.0.0.12/order").json(), hdr: []string{"Content-Type", ctJSON}, code: 400,
			want: `instance id "10.0.0.12/order" must not contain '/'`},
		{name: "batch register with a slash in the app name", method: "POST", path: "/eureka/peerreplication/batch",
			body: mustJSON(map[string]any{"replicationList": []any{
				map[string]any{"appName": "BAD/X", "id": fresh.id(), "action": "Register", "instanceInfo": map[string]any(fresh.with("app", "BAD/X"))},
			}}),
			hdr: []string{"Content-Type", ctJSON}, code: 200, want: `{"responseList":[{"statusCode":200}]}`}, // Eureka's answer; nothing applied
		{name: "get app with encoded slash", method: "GET", path: "/eureka/apps/BAD%2FX", code: 400, want: slashApp},
		{name: "get instance with encoded slash in app", method: "GET", path: "/eureka/v2/apps/BAD%2FX/" + id, code: 400, want: slashApp},
		{name: "get instance with encoded slash in id", method: "GET", path: "/eureka/apps/ORDER-SERVICE/a%2Fb", code: 400, want: slashID},
		{name: "renew with encoded slash", method: "PUT", path: "/eureka/apps/BAD%2FX/" + id, code: 400, want: slashApp},
		{name: "renew with encoded slash in id", method: "PUT", path: "/eureka/apps/ORDER-SERVICE/a%2Fb?status=UP", code: 400, want: slashID},
		{name: "cancel with encoded slash", method: "DELETE", path: "/eureka/apps/BAD%2FX/" + id, code: 400, want: slashApp},
		{name: "status with encoded slash", method: "PUT", path: "/eureka/apps/BAD%2FX/" + id + "/status?value=DOWN", code: 400, want: slashApp},
		{name: "override delete with encoded slash", method: "DELETE", path: "/eureka/v2/apps/ORDER-SERVICE/a%2Fb/status", code: 400, want: slashID},
		{name: "metadata with encoded slash", method: "PUT", path: "/eureka/apps/BAD%2FX/" + id + "/metadata?a=b", code: 400, want: slashApp},
		{name: "instance by id with encoded slash", method: "GET", path: "/eureka/instances/a%2Fb", code: 400, want: slashID},
		{name: "metadata of unknown instance", method: "PUT", path: "/eureka/apps/ORDER-SERVICE/nobody/metadata?a=b", code: 404, want: ""},
		{name: "cancel of unknown app", method: "DELETE", path: "/eureka/apps/NO-SUCH-APP/" + id, code: 404, want: ""},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := h.registryState()
			res := h.do(c.method, c.path, c.body, c.hdr...)
			assert.Equal(t, c.code, res.code, "%s", res)
			assert.Less(t, res.code, 500, "never a 5xx")
			switch {
			case c.contains:
				assert.Contains(t, string(res.body), c.want)
			case c.want == parseErr:
				assert.True(t, strings.HasPrefix(string(res.body), parseErr), "%s", res.body)
			default:
				assert.Equal(t, c.want, string(res.body))
			}
			if res.code == http.StatusBadRequest || res.code == http.StatusUnsupportedMediaType {
				assert.Equal(t, "text/plain; charset=utf-8", res.header.Get("Content-Type"), "every 400 and 415 is plain text")
			}
			assert.NotContains(t, string(res.body), "httpapi:", "no package name in an answer")
			assert.Equal(t, before, h.registryState(), "the registry must be untouched")
		})
	}

	// The registry still holds exactly what the setup put there.
	got := h.mustInstance("ORDER-SERVICE", id)
	assert.Equal(t, "OUT_OF_SERVICE", got.Status)
	assert.Equal(t, map[string]string{id: "OUT_OF_SERVICE"}, h.overrides())
	code, _ := h.instance("ORDER-SERVICE", fresh.id())
	assert.Equal(t, http.StatusNotFound, code)
	assert.Equal(t, []string{"ORDER-SERVICE/" + id}, h.apps("/eureka/apps").ids())

	// Nothing panicked or failed internally (net/http logs recovered
	// panics through the node's logger; 5xx paths log at ERROR).
	logs := h.logs.String()
	assert.NotContains(t, logs, "panic")
	assert.NotContains(t, logs, "level=ERROR")
}

// TestGzipBody: a valid gzip request body registers like a plain one, and
// the limit applies to the inflated size.
func TestGzipBody(t *testing.T) {
	h := startNode(t, func(c *node.Config) { c.MaxBodyBytes = maxBody })
	i := javaInstance("ORDER-SERVICE", 11)
	body := gzipped(i.json())
	res := h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", body, "Content-Type", ctJSON, "Content-Encoding", "gzip")
	require.Equal(t, http.StatusNoContent, res.code, "%s", res)
	assert.Empty(t, res.body)
	assert.Equal(t, "UP", h.mustInstance("ORDER-SERVICE", i.id()).Status)

	x := gzipped([]byte(fargoXML))
	res = h.do(http.MethodPost, "/eureka/apps/fargo-xml", x, "Content-Type", ctXML, "Content-Encoding", "x-gzip")
	require.Equal(t, http.StatusNoContent, res.code, "%s", res)
	h.mustInstance("FARGO-XML", "fargo-xml-1")

	// Compressed well under the limit, inflated just over it: 413.
	over := i.with("metadata", map[string]any{"pad": strings.Repeat("y", maxBody)}).json()
	require.Greater(t, len(over), maxBody)
	res = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", gzipped(over), "Content-Type", ctJSON, "Content-Encoding", "gzip")
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.code, "%s", res)
	// Inflated exactly to the limit is fine.
	exact := i.with("metadata", map[string]any{"pad": ""}).json()
	exact = i.with("metadata", map[string]any{"pad": strings.Repeat("z", maxBody-len(exact))}).json()
	require.Len(t, exact, maxBody)
	res = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", gzipped(exact), "Content-Type", ctJSON, "Content-Encoding", "gzip")
	assert.Equal(t, http.StatusNoContent, res.code, "%s", res)
	res = h.do(http.MethodPost, "/eureka/apps/ORDER-SERVICE", exact, "Content-Type", ctJSON)
	assert.Equal(t, http.StatusNoContent, res.code, "plain body at the limit: %s", res)
}

// TestBodyLengths: the body limit holds whether the client declares the
// body's length (Content-Length, read without the limiting readers) or not
// (chunked), at the limit and one byte over it.
func TestBodyLengths(t *testing.T) {
	h := startNode(t, func(c *node.Config) { c.MaxBodyBytes = maxBody })
	i := javaInstance("ORDER-SERVICE", 11)
	exact := i.with("metadata", map[string]any{"pad": ""}).json()
	exact = i.with("metadata", map[string]any{"pad": strings.Repeat("z", maxBody-len(exact))}).json()
	require.Len(t, exact, maxBody)
	over := bytes.Replace(exact, []byte(`"z`), []byte(`"zz`), 1)
	require.Len(t, over, maxBody+1)

	post := func(body []byte, chunked bool) (int, string) {
		var rd io.Reader = bytes.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // no length known: sent chunked
		}
		req, err := http.NewRequest(http.MethodPost, h.base+"/eureka/apps/ORDER-SERVICE", rd)
		require.NoError(t, err)
		req.Header.Set("Content-Type", ctJSON)
		if chunked {
			req.ContentLength = -1 // unknown: the transport sends the body chunked
		} else {
			require.EqualValues(t, len(body), req.ContentLength)
		}
		res, err := h.client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	for _, chunked := range []bool{false, true} {
		code, msg := post(over, chunked)
		assert.Equal(t, http.StatusRequestEntityTooLarge, code, "chunked %v: %s", chunked, msg)
		assert.Equal(t, "request body exceeds 4096 bytes", msg, "chunked %v", chunked)
		code, msg = post(exact, chunked)
		assert.Equal(t, http.StatusNoContent, code, "chunked %v: %s", chunked, msg)
	}
	assert.Equal(t, "UP", h.mustInstance("ORDER-SERVICE", i.id()).Status)
}
