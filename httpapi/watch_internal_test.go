package httpapi

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPushConfigValidate(t *testing.T) {
	var nilCfg *PushConfig
	require.NoError(t, nilCfg.Validate())
	def := DefaultPushConfig()
	require.NoError(t, def.Validate())
	for name, tc := range map[string]struct {
		mutate func(*PushConfig)
		msg    string
	}{
		"zero MaxWait":          {func(c *PushConfig) { c.MaxWait = 0 }, "MaxWait 0s must be positive"},
		"huge MaxWait":          {func(c *PushConfig) { c.MaxWait = time.Hour }, "at most 10m0s"},
		"negative jitter":       {func(c *PushConfig) { c.WaitJitter = -time.Second }, "WaitJitter -1s"},
		"jitter of the wait":    {func(c *PushConfig) { c.WaitJitter = c.MaxWait }, "below MaxWait"},
		"zero check interval":   {func(c *PushConfig) { c.ChangeCheckInterval = 0 }, "ChangeCheckInterval 0s"},
		"slow check interval":   {func(c *PushConfig) { c.ChangeCheckInterval = 2 * time.Second }, "at most 1s"},
		"negative coalesce":     {func(c *PushConfig) { c.StreamCoalesce = -1 }, "StreamCoalesce"},
		"long coalesce":         {func(c *PushConfig) { c.StreamCoalesce = 5 * time.Second }, "StreamCoalesce 5s"},
		"no keep-alive":         {func(c *PushConfig) { c.StreamKeepAlive = 0 }, "StreamKeepAlive 0s must be positive"},
		"empty window":          {func(c *PushConfig) { c.StreamWindow = 0 }, "StreamWindow 0 must be at least 1"},
		"empty backlog":         {func(c *PushConfig) { c.StreamBacklog = 0 }, "StreamBacklog 0 must be at least 1"},
		"no write timeout":      {func(c *PushConfig) { c.StreamWriteTimeout = 0 }, "StreamWriteTimeout 0s"},
		"no streams":            {func(c *PushConfig) { c.MaxStreams = 0 }, "MaxStreams 0 must be at least 1"},
		"negative write timout": {func(c *PushConfig) { c.StreamWriteTimeout = -time.Second }, "must be positive"},
	} {
		c := DefaultPushConfig()
		tc.mutate(&c)
		err := c.Validate()
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), tc.msg, name)
			assert.Contains(t, err.Error(), "httpapi: push ", name)
		}
	}
}

func TestParseWait(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0": 0, "30": 30 * time.Second, "30s": 30 * time.Second, "1500ms": 1500 * time.Millisecond,
		"1m": time.Minute, "61": time.Minute, "2m": time.Minute, "999999999": time.Minute,
	} {
		got, err := parseWait(in, time.Minute)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "x", "-1", "-1s", "1e3", "30 s", "99999999999999999999"} {
		_, err := parseWait(in, time.Minute)
		assert.Error(t, err, in)
	}
}

func TestMatchETag(t *testing.T) {
	tag := `W/"0123"`
	for header, want := range map[string]bool{
		`W/"0123"`:             true,
		`"0123"`:               true, // weak comparison
		`"x", W/"0123"`:        true,
		` "x" ,  W/"0123" `:    true,
		`*`:                    true,
		`"x"`:                  false,
		`W/"01234"`:            false,
		``:                     false,
		`,,`:                   false,
		`W/"0123`:              false,
		`"0123" , "0124"`:      true,
		`"0124", "0125", "01"`: false,
	} {
		assert.Equal(t, want, matchETag(header, tag), "%q", header)
	}
}

func TestVersionDeltaSpan(t *testing.T) {
	json := []byte(`{"applications":{"versions__delta":"17","apps__hashcode":"UP_1_","application":[]}}`)
	i, n := versionDeltaSpan(json, "17")
	require.Equal(t, 2, n)
	assert.Equal(t, "17", string(json[i:i+n]))
	xml := []byte(`<applications>` + "\n" + `  <versions__delta>17</versions__delta>` + "\n" + `  <apps__hashcode>UP_1_</apps__hashcode></applications>`)
	i, n = versionDeltaSpan(xml, "17")
	require.Equal(t, 2, n)
	assert.Equal(t, "17", string(xml[i:i+n]))
	// A value that is only a prefix of the number there is not ours.
	_, n = versionDeltaSpan(json, "1")
	assert.Zero(t, n)
	_, n = versionDeltaSpan([]byte(`{"applications":{}}`), "1")
	assert.Zero(t, n)
}

func TestAppendFrame(t *testing.T) {
	assert.Equal(t, "id: e-1\nevent: delta\ndata: {}\n\n", string(appendFrame(nil, "delta", "e-1", []byte("{}"))))
	assert.Equal(t, "id: e-2\nevent: snapshot\ndata: a\ndata: b\ndata: c\ndata: \n\n",
		string(appendFrame(nil, "snapshot", "e-2", []byte("a\nb\r\nc\r"))))
}

func TestListsAddress(t *testing.T) {
	assert.True(t, listsAddress("a,b", "b"))
	assert.True(t, listsAddress("a, b ", "b"))
	assert.False(t, listsAddress("ab", "b"))
	assert.False(t, listsAddress("", "b"))
	assert.False(t, listsAddress("B", "b"), "VIPs match case-sensitively")
}

// queryValue finds what URL.Query finds for a key, first value first.
func TestQueryValueIsURLQuery(t *testing.T) {
	for _, raw := range []string{
		"", "wait=60", "wait=60s", "a=1&wait=2", "wait", "wait=", "w%61it=5", "wait=%3", "wait=%33",
		"wait=1;x=2", "x;y&wait=3", "wait=1+2", "wait=%2B5", "&&wait=4&wait=5", "=&wait=6", "wait=7=8",
		"wa+it=9", "%zz=1&wait=10", "wait=%zz&wait=11", "WAIT=12", "a=b&c", strings.Repeat("a=1&", 1200) + "wait=13",
	} {
		want, wantOK := (&url.URL{RawQuery: raw}).Query()["wait"]
		got, ok := queryValue(raw, "wait")
		assert.Equal(t, wantOK, ok, raw)
		if wantOK {
			assert.Equal(t, want[0], got, raw)
		}
	}
}
