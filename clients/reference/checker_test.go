package reference_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests show the checker failing: answers that differ in a way no
// README row explains, a README table without a row the code explains, and
// a row whose difference is no longer seen.

// jsonAnswer is a 200 JSON answer with body.
func jsonAnswer(body string) answer {
	return answer{Status: http.StatusOK, Media: "application/json", Body: []byte(body),
		Tree: parseBody("application/json", []byte(body))}
}

// allRows are the ids of every known difference, as if README listed them.
func allRows() map[string]bool {
	rows := map[string]bool{}
	for _, k := range knownDiffs {
		rows[k.id] = true
	}
	return rows
}

func testComparison() comparison {
	now := time.Now()
	return comparison{since: now.Add(-time.Minute), until: now.Add(time.Hour)}
}

func TestCheckerReportsUndocumentedDifference(t *testing.T) {
	s := get("GET apps/{app} JSON", "/apps/A", jsonAccept)
	ref := jsonAnswer(`{"application":{"name":"A","instance":[{"instanceId":"i1","status":"UP","port":{"$":80,"@enabled":"true"}}]}}`)
	heu := jsonAnswer(`{"application":{"name":"A","instance":[{"instanceId":"i1","status":"DOWN","port":{"$":80,"@enabled":true}}]}}`)
	explained, msg := compare(testComparison(), s, ref, heu, allRows())
	assert.Empty(t, explained)
	require.NotEmpty(t, msg, "an undocumented difference must be reported")
	assert.Contains(t, msg, `body.application.instance[i1].status: reference "UP", heureka "DOWN"`)
	// A string against a boolean is a difference of type.
	assert.Contains(t, msg, `body.application.instance[i1].port.@enabled: reference "true", heureka true`)
	assert.Contains(t, msg, "GET /apps/A")
}

func TestCheckerIgnoresOrderAndServerTimestamps(t *testing.T) {
	cmp := testComparison()
	server := strconv.FormatInt(time.Now().UnixMilli(), 10)
	later := strconv.FormatInt(time.Now().Add(90*time.Second).UnixMilli(), 10)
	ref := jsonAnswer(`{"applications":{"application":[` +
		`{"name":"A","instance":[{"instanceId":"a1","lastUpdatedTimestamp":"` + server + `"},{"instanceId":"a2"}]},` +
		`{"name":"B","instance":[{"instanceId":"b1"}]}]}}`)
	heu := jsonAnswer(`{"applications":{"application":[` +
		`{"name":"B","instance":[{"instanceId":"b1"}]},` +
		`{"name":"A","instance":[{"instanceId":"a2"},{"instanceId":"a1","lastUpdatedTimestamp":"` + later + `"}]}]}}`)
	assert.Empty(t, cmp.diff(ref, heu))

	// A timestamp the client sent is compared exactly.
	ref = jsonAnswer(`{"instance":{"instanceId":"a1","lastDirtyTimestamp":"1754500000001"}}`)
	heu = jsonAnswer(`{"instance":{"instanceId":"a1","lastDirtyTimestamp":"1754500000002"}}`)
	assert.Equal(t, []string{`body.instance.lastDirtyTimestamp: reference "1754500000001", heureka "1754500000002"`},
		cmp.diff(ref, heu))

	// A missing instance is a difference.
	ref = jsonAnswer(`{"application":{"instance":[{"instanceId":"a1"},{"instanceId":"a2"}]}}`)
	heu = jsonAnswer(`{"application":{"instance":[{"instanceId":"a1"}]}}`)
	assert.Equal(t, []string{"body.application.instance[a2]: only the reference has it"}, cmp.diff(ref, heu))
}

func TestCheckerComparesXMLStructurally(t *testing.T) {
	cmp := testComparison()
	xmlAnswer := func(body string) answer {
		return answer{Status: 200, Media: "application/xml", Body: []byte(body), Tree: parseBody("application/xml", []byte(body))}
	}
	ref := xmlAnswer("<instance>\n  <port enabled=\"true\">80</port>\n  <status>UP</status>\n</instance>")
	heu := xmlAnswer(`<instance><status>UP</status><port enabled="true">80</port></instance>`)
	assert.Empty(t, cmp.diff(ref, heu), "whitespace and element order are not compared")
	heu = xmlAnswer(`<instance><status>UP</status><port enabled="false">80</port></instance>`)
	assert.Equal(t, []string{`body.instance[0].port[0].@enabled: reference "true", heureka "false"`}, cmp.diff(ref, heu))
}

// A known difference explains only its own aspect: a 500 against a 400 is
// bad-param-400 only for a request with a parameter it covers.
func TestKnownDifferenceDoesNotHideOthers(t *testing.T) {
	ref := answer{Status: http.StatusInternalServerError}
	heu := answer{Status: http.StatusBadRequest, Media: "text/plain", Body: []byte("bad"), Tree: "bad"}
	explained, msg := compare(testComparison(), put("renew", "/apps/A/i?lastDirtyTimestamp=x"), ref, heu, allRows())
	assert.Equal(t, []string{"bad-param-400"}, explained)
	assert.Empty(t, msg)

	explained, msg = compare(testComparison(), put("renew", "/apps/A/i"), ref, heu, allRows())
	assert.Empty(t, explained)
	assert.Contains(t, msg, "status: reference 500, heureka 400")

	// Without its README row, a known difference explains nothing.
	rows := allRows()
	delete(rows, "bad-param-400")
	_, msg = compare(testComparison(), put("renew", "/apps/A/i?lastDirtyTimestamp=x"), ref, heu, rows)
	assert.Contains(t, msg, "an undocumented difference")
}

func TestReadmeTableMissingARow(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	rows, err := tableIDs(string(readme))
	require.NoError(t, err)
	assert.Empty(t, unlistedDiffs(rows), "every explained difference has a README row")

	var kept []string
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "| `spring-error-body` |") {
			kept = append(kept, line)
		}
	}
	rows, err = tableIDs(strings.Join(kept, "\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"spring-error-body"}, unlistedDiffs(rows))
}

func TestReadmeTableRowWithoutID(t *testing.T) {
	const readme = "## Eureka compatibility, and where Heureka differs on purpose\n\n" +
		"| id | Eureka | Heureka | why |\n|---|---|---|---|\n| `a` | x | y | z |\n| b | x | y | z |\n"
	_, err := tableIDs(readme)
	assert.ErrorContains(t, err, "must be an id")
	_, err = tableIDs("# nothing here\n")
	assert.ErrorContains(t, err, "no section")
}

func TestAuditRowNoLongerTrue(t *testing.T) {
	errs, notes := auditRows([]string{"bad-param-400", "sync-gate"}, map[string]int{})
	assert.Equal(t, []string{`README row "bad-param-400": the difference it documents was not observed; is the row still true?`}, errs)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], `"sync-gate": not observable`)

	errs, _ = auditRows([]string{"bad-param-400"}, map[string]int{"bad-param-400": 2})
	assert.Empty(t, errs)
}

// TestDifferentialSeesTampering runs reads through a proxy that alters
// Heureka's answers, against the real reference server, and expects the
// checker to report each alteration. It only reads what does not exist,
// so it neither depends on nor changes the registries' contents.
func TestDifferentialSeesTampering(t *testing.T) {
	r := reference(t)
	n := startHeureka(t)
	target, err := url.Parse(n.URL())
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
	proxy.ModifyResponse = func(resp *http.Response) error {
		switch {
		case resp.StatusCode == http.StatusNotFound:
			resp.StatusCode = http.StatusGone
		case resp.Request.URL.Path == "/eureka/vips/no-such-vip":
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			b = bytes.Replace(b, []byte(`"versions__delta":"-1"`), []byte(`"versions__delta":"-2"`), 1)
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)

	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	ids, err := tableIDs(string(readme))
	require.NoError(t, err)
	rows := map[string]bool{}
	for _, id := range ids {
		rows[id] = true
	}
	now := time.Now()
	cmp := comparison{since: now.Add(-time.Minute), until: now.Add(time.Hour)}
	for _, c := range []struct {
		s    step
		want string
	}{
		{get("GET vips unknown", "/vips/no-such-vip", jsonAccept), `body.applications.versions__delta: reference "-1", heureka "-2"`},
		{get("GET apps/{app} unknown", "/apps/NO-SUCH-APP", jsonAccept), "status: reference 404, heureka 410"},
	} {
		refA, err := send(r.url, c.s)
		require.NoError(t, err)
		heuA, err := send(front.URL+"/eureka", c.s)
		require.NoError(t, err)
		_, msg := compare(cmp, c.s, refA, heuA, rows)
		assert.Contains(t, msg, c.want, "%s: the checker must see the tampering", c.s.kind)

		// Untampered, the same read compares equal (or is explained).
		heuA, err = send(n.URL(), c.s)
		require.NoError(t, err)
		_, msg = compare(cmp, c.s, refA, heuA, rows)
		assert.Empty(t, msg, c.s.kind)
	}
}

// TestMissingReferenceFailsClearly: without the jar or java the reference
// cannot start, and the error says what is missing (reference turns it
// into a failure that names make javadeps; nothing is skipped).
func TestMissingReferenceFailsClearly(t *testing.T) {
	saved := jarPath
	t.Cleanup(func() { jarPath = saved })
	jarPath = filepath.Join(t.TempDir(), "no-such.jar")
	_, err := startReference(referenceArgs)
	assert.ErrorContains(t, err, "reference server jar missing")

	jarPath = saved
	t.Setenv("PATH", t.TempDir())
	_, err = startReference(referenceArgs)
	assert.ErrorContains(t, err, "no java on PATH")
}
