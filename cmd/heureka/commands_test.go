package main

// Tests of the commands for people (members, apps, status) against a real
// node started in process, and of the command tree: version, help, a
// mistyped command.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runCmd runs the heureka command line args with the environment env and
// returns its exit status, stdout and stderr.
func runCmd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runContext(context.Background(), args, envMap(env), &out, &errOut)
	return code, out.String(), errOut.String()
}

// register registers instance id of app at base (a node's http://host:port)
// with status, and fails the test unless the node answers 204.
func register(t *testing.T, base, app, id string) {
	t.Helper()
	code, body := procDo("POST", base+"/eureka/apps/"+app, procRegisterBody(app, id))
	require.Equal(t, http.StatusNoContent, code, body)
}

// tableRows returns the rows of a table printed by a command, each split on
// runs of two or more spaces (tabwriter's padding), header first.
func tableRows(out string) [][]string {
	var rows [][]string
	sep := regexp.MustCompile(`\s{2,}`)
	for line := range strings.SplitSeq(out, "\n") {
		if strings.TrimSpace(line) == "" {
			break // the table ends at the first blank line
		}
		rows = append(rows, sep.Split(strings.TrimSpace(line), -1))
	}
	return rows
}

func TestClientCommandsAgainstANode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := startCommandNode(t)
	base := "http://" + n.Addr()
	register(t, base, "ORDERS", "orders-1")
	register(t, base, "ORDERS", "orders-2")
	register(t, base, "USERS", "users-1")
	code, body := procDo("PUT", base+"/eureka/apps/ORDERS/orders-2/status?value=OUT_OF_SERVICE", "")
	require.Equal(t, http.StatusOK, code, body)

	t.Run("members", func(t *testing.T) {
		code, out, errOut := runCmd(t, nil, "members", "--addr", base)
		require.Equal(t, 0, code, errOut)
		rows := tableRows(out)
		require.Len(t, rows, 2, "header and this node: %q", out)
		assert.Equal(t, []string{"NAME", "STATE", "GOSSIP ADDRESS", "EUREKA URL", "OWNS", "RENEWALS", "SELF-PRESERVATION"}, rows[0])
		assert.Equal(t, "TestClientCommandsAgainstANode", rows[1][0])
		assert.Equal(t, "alive", rows[1][1])
		assert.Equal(t, "100%", rows[1][4])
	})
	t.Run("apps", func(t *testing.T) {
		// A Eureka service URL works as --addr too.
		code, out, errOut := runCmd(t, nil, "apps", "--addr", base+"/eureka/")
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, [][]string{
			{"APPLICATION", "INSTANCES", "STATUS"},
			{"ORDERS", "2", "UP 1, OUT_OF_SERVICE 1"},
			{"USERS", "1", "UP 1"},
		}, tableRows(out))
		assert.Contains(t, out, "2 application(s), 3 instance(s).")
	})
	t.Run("apps APP", func(t *testing.T) {
		code, out, errOut := runCmd(t, nil, "apps", "orders", "--addr", base)
		require.Equal(t, 0, code, errOut)
		rows := tableRows(out)
		require.Len(t, rows, 3, "%q", out)
		assert.Equal(t, []string{"INSTANCE ID", "STATUS", "HOST", "IP", "PORT", "ZONE", "REGISTERED", "LAST RENEWAL"}, rows[0])
		assert.Equal(t, []string{"orders-1", "UP", "orders-1.example", "10.1.1.1", "8080", "-"}, rows[1][:6])
		assert.Equal(t, []string{"orders-2", "OUT_OF_SERVICE (override)"}, rows[2][:2])
		assert.Regexp(t, `^\d+s ago$`, rows[1][6])
	})
	t.Run("apps unknown", func(t *testing.T) {
		code, out, errOut := runCmd(t, nil, "apps", "NOPE", "--addr", base)
		assert.Equal(t, 1, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, `no application "NOPE" is registered`)
	})
	t.Run("status", func(t *testing.T) {
		code, out, errOut := runCmd(t, nil, "status", "--addr", base)
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `(?m)^node\s+TestClientCommandsAgainstANode$`, out)
		assert.Regexp(t, `(?m)^ready\s+yes$`, out)
		assert.Regexp(t, `(?m)^replicas\s+0 available, 0 unavailable$`, out)
		assert.Regexp(t, `(?m)^self-preservation\s+\S`, out)
		assert.Regexp(t, `(?m)^  why\s+\S`, out)
		assert.Regexp(t, `(?m)^eviction\s+(runs|held)`, out)
	})
	t.Run("json", func(t *testing.T) {
		for _, args := range [][]string{{"members"}, {"apps"}, {"apps", "USERS"}, {"status"}} {
			code, out, errOut := runCmd(t, nil, append(args, "--json", "--addr", base)...)
			require.Equal(t, 0, code, "%v: %s", args, errOut)
			assert.True(t, json.Valid([]byte(out)), "%v: %s", args, out)
		}
		_, out, _ := runCmd(t, nil, "apps", "USERS", "--json", "--addr", base)
		var doc struct {
			Application struct {
				Name string `json:"name"`
			} `json:"application"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		assert.Equal(t, "USERS", doc.Application.Name, "the node's own document")
	})
	t.Run("HEUREKA_ADDR", func(t *testing.T) {
		code, out, errOut := runCmd(t, map[string]string{"HEUREKA_ADDR": base}, "apps")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "ORDERS")
	})
}

func TestClientCommandsNoNode(t *testing.T) {
	dead := "http://" + sigFreeAddr(t)
	code, out, errOut := runCmd(t, nil, "members", "--addr", dead)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "heureka: cannot reach a node at "+dead)
	assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)

	code, _, errOut = runCmd(t, nil, "status", "--addr", "ftp://x")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--addr: want a URL")
}

// TestClientCredentials: credentials come from the URL, else from
// HEUREKA_USER and HEUREKA_PASSWORD; a 401 says how to give them, and no
// message shows the password.
func TestClientCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "ops" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="heureka"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"name":"a","address":"10.0.0.1:7946","state":"alive","owned":1}]`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	code, out, errOut := runCmd(t, nil, "members", "--addr", "http://ops:s3cret@"+host)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "10.0.0.1:7946")

	code, out, errOut = runCmd(t, map[string]string{"HEUREKA_USER": "ops", "HEUREKA_PASSWORD": "s3cret"}, "members", "--addr", srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "alive")

	code, _, errOut = runCmd(t, nil, "members", "--addr", "http://ops:wrong@"+host)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "401 Unauthorized")
	assert.Contains(t, errOut, "HEUREKA_USER")
	assert.NotContains(t, errOut, "wrong", "the password is never printed")
}

func TestCommandTree(t *testing.T) {
	t.Run("version", func(t *testing.T) {
		for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
			code, out, errOut := runCmd(t, nil, args...)
			assert.Equal(t, 0, code, "%v", args)
			assert.Equal(t, "heureka "+version+"\n", out, "%v", args)
			assert.Empty(t, errOut, "%v", args)
		}
	})
	t.Run("mistyped command", func(t *testing.T) {
		for typed, want := range map[string]string{"memebrs": "members", "stauts": "status", "app": "apps", "serv": "serve"} {
			code, out, errOut := runCmd(t, nil, typed)
			assert.Equal(t, 2, code, typed)
			assert.Empty(t, out, typed)
			assert.Contains(t, errOut, `unknown command "`+typed+`"`, typed)
			assert.Contains(t, errOut, "Did you mean this?\n\t"+want, typed)
		}
	})
	t.Run("help lists every flag, one per line", func(t *testing.T) {
		code, out, _ := runCmd(t, nil, "help")
		require.Equal(t, 0, code)
		flagLine := regexp.MustCompile(`^\s*--([a-z0-9-]+)(\s|$)`)
		listed := map[string]int{}
		for line := range strings.SplitSeq(out, "\n") {
			if m := flagLine.FindStringSubmatch(line); m != nil {
				listed[m[1]]++
			}
		}
		for _, o := range options {
			assert.Equal(t, 1, listed[o.name], "--%s on a line of its own, once", o.name)
		}
	})
	t.Run("command help", func(t *testing.T) {
		code, out, _ := runCmd(t, nil, "help", "apps")
		require.Equal(t, 0, code)
		assert.Contains(t, out, "--addr")
		assert.Contains(t, out, "--json")
		code, out, _ = runCmd(t, nil, "members", "-h")
		require.Equal(t, 0, code)
		assert.Contains(t, out, "HEUREKA_PASSWORD")
	})
	t.Run("client commands take no serve flags", func(t *testing.T) {
		code, _, errOut := runCmd(t, nil, "members", "--http-addr", ":1")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "unknown flag: --http-addr")
	})
}
