package reference_test

// The known differences: for each README row this test can observe, how
// its difference shows in a pair of answers. An explanation recognises its
// difference narrowly (the request it follows, both statuses and media
// types) and removes only that, so that any other difference in the same
// answers still fails the test.

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// knownDiff says how one README row's difference shows in an answer.
type knownDiff struct {
	// id is the row's id in README.md's compatibility table.
	id string
	// explain recognises the difference in the answers to s; when it is
	// there, it removes it (making Heureka's answer look like the
	// reference's in that respect only) and reports true.
	explain func(s step, ref, heu *answer) bool
	// onlyExpected limits the explanation to the steps that name it
	// (step.expect): for differences of state that look like others
	// (an instance one server has and the other has not).
	onlyExpected bool
}

// knownDiffs are the README rows this test can observe. Rows it cannot
// (timing, self-preservation, clustering) have no entry.
var knownDiffs = []knownDiff{
	{id: "status-selfpreservation", explain: func(s step, ref, heu *answer) bool {
		// Heureka's status carries more. What the figures say (CPUs,
		// memory, uptime, replicas) and the server's own instance
		// describe each server itself and are not compared; their
		// elements are.
		if s.path != "/status" || ref.Media != "application/xml" || heu.Media != "application/xml" {
			return false
		}
		r, h := statusRoot(ref.Tree), statusRoot(heu.Tree)
		if r == nil || h == nil || h["selfPreservation"] == nil || h["readiness"] == nil {
			return false
		}
		delete(h, "selfPreservation")
		delete(h, "readiness")
		delete(h, "eviction") // the holds on eviction, a Heureka addition
		delete(h, "regions")  // remote regions' state, when configured
		delete(h, "isHeathly")
		if gs, ok := first(h["generalStats"]); ok {
			delete(gs, "environment")
		}
		for _, root := range []map[string]any{r, h} {
			for _, k := range []string{"generalStats", "applicationStats"} {
				if m, ok := first(root[k]); ok {
					for f := range m {
						m[f] = []any{"(this server's)"}
					}
				}
			}
			if _, ok := root["instanceInfo"]; ok {
				root["instanceInfo"] = "(this server's instance)"
			}
		}
		return true
	}},
	{id: "accept-label", explain: func(s step, ref, heu *answer) bool {
		// Eureka picks JSON when Accept contains "json" anywhere, but
		// labels the answer with Jersey's choice, XML when listed first.
		if ref.Media != "application/xml" || heu.Media != "application/json" ||
			!strings.Contains(s.header["Accept"], "json") {
			return false
		}
		tree := parseBody("application/json", ref.Body)
		if _, ok := tree.(string); ok { // not JSON after all
			return false
		}
		ref.Media, ref.Tree = heu.Media, tree
		return true
	}},
	{id: "accept-unmatched", explain: func(s step, ref, heu *answer) bool {
		a := s.header["Accept"]
		if a == "" || strings.Contains(a, "json") || strings.Contains(a, "xml") || strings.Contains(a, "*/*") ||
			ref.Status != http.StatusNotAcceptable || heu.Status != http.StatusOK || heu.Media != "application/xml" {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "batch-unknown-action", explain: func(s step, ref, heu *answer) bool {
		// Eureka cannot decode the whole batch; Heureka answers the
		// unknown item with a 400 entry.
		if !strings.Contains(s.path, "/peerreplication/batch") || !cannotParse(ref) || heu.Status != http.StatusOK ||
			!strings.Contains(string(heu.Body), `"statusCode":400`) {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "replica-renew-override", onlyExpected: true, explain: func(s step, ref, heu *answer) bool {
		// Eureka stores the override on the instance and leaves the
		// status as it was; Heureka applies it and publishes the change.
		r, h := instanceOf(ref.Tree), instanceOf(heu.Tree)
		if r == nil || h == nil || fmt.Sprint(r["status"]) == fmt.Sprint(h["status"]) ||
			fmt.Sprint(h["status"]) != fmt.Sprint(h[overriddenKey(h)]) {
			return false
		}
		r["status"], r["actionType"] = h["status"], h["actionType"]
		return true
	}},
	{id: "cancel-outranks", onlyExpected: true, explain: func(s step, ref, heu *answer) bool {
		// Eureka registered the instance again; Heureka kept it cancelled.
		if ref.Status != http.StatusOK || heu.Status != http.StatusNotFound {
			return false
		}
		*ref = *heu
		return true
	}},
	{id: "xml-app-group", explain: func(s step, ref, heu *answer) bool {
		// Eureka keeps an appGroupName sent in XML as it came (its JSON
		// decoder upper-cases it); Heureka always upper-cases it.
		return upperField(ref.Tree, "appGroupName")
	}},
	{id: "no-content-type", explain: func(s step, ref, heu *answer) bool {
		if !s.scratch || s.body == "" || s.header["Content-Type"] != "" ||
			ref.Status != http.StatusUnsupportedMediaType || heu.Status != http.StatusNoContent {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "slash-400", explain: func(s step, ref, heu *answer) bool {
		// Tomcat refuses %2F with its HTML error page; Heureka says why.
		if !strings.Contains(s.path, "%2F") || ref.Status != http.StatusBadRequest || ref.Media != "text/html" ||
			heu.Status != http.StatusBadRequest || heu.Media != "text/plain" {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "gzip-body", explain: func(s step, ref, heu *answer) bool {
		if !s.scratch || s.header["Content-Encoding"] != "gzip" || !cannotParse(ref) || heu.Status != http.StatusNoContent {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "status-json", explain: func(s step, ref, heu *answer) bool {
		// Eureka's StatusInfo does not serialise to JSON: 500.
		if s.path != "/status" || !strings.Contains(s.header["Accept"], "json") ||
			ref.Status != http.StatusInternalServerError || heu.Status != http.StatusOK || heu.Media != "application/json" {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "compact-vip-stale", explain: func(s step, ref, heu *answer) bool {
		// Eureka never invalidates the compact VIP and SVIP cache
		// entries (until they expire after 180 s): the reference repeats
		// the answer it gave to the same request before the writes since.
		if !strings.EqualFold(s.header["X-Eureka-Accept"], "compact") ||
			!(strings.HasPrefix(s.path, "/vips/") || strings.HasPrefix(s.path, "/svips/")) ||
			s.refBefore == nil || !bytes.Equal(s.refBefore.Body, ref.Body) || ref.Status != heu.Status {
			return false
		}
		*ref = *heu
		return true
	}},
	{id: "compact-registered-empty", explain: func(s step, ref, heu *answer) bool {
		// Jackson writes Applications' isRegisteredApplicationsEmpty()
		// getter into the compact format.
		if !strings.EqualFold(s.header["X-Eureka-Accept"], "compact") {
			return false
		}
		m, ok := ref.Tree.(map[string]any)
		if !ok {
			return false
		}
		apps := m["applications"]
		if l, ok := apps.([]any); ok && len(l) == 1 { // XML
			apps = l[0]
		}
		am, ok := apps.(map[string]any)
		if !ok || am["registeredApplicationsEmpty"] == nil {
			return false
		}
		delete(am, "registeredApplicationsEmpty")
		return true
	}},
	{id: "spring-error-body", explain: func(s step, ref, heu *answer) bool {
		// Spring Boot's error document for an error without a body.
		m, ok := ref.Tree.(map[string]any)
		if !ok || ref.Media != "application/json" || len(m) != 4 || m["path"] == nil || m["timestamp"] == nil ||
			m["error"] == nil || fmt.Sprint(m["status"]) != strconv.Itoa(ref.Status) || heu.Status != ref.Status ||
			(len(heu.Body) > 0 && heu.Media != "text/plain") {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "validation-media-type", explain: func(s step, ref, heu *answer) bool {
		// The same plain-text message, labelled with the request's
		// media type by Eureka.
		if _, text := ref.Tree.(string); !text || ref.Status != http.StatusBadRequest || heu.Status != ref.Status ||
			heu.Media != "text/plain" || ref.Media != s.header["Content-Type"] ||
			strings.TrimSpace(string(ref.Body)) != heu.Tree {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "statusoverrides", explain: func(s step, ref, heu *answer) bool {
		if !strings.Contains(s.path, "/serverinfo/statusoverrides") || ref.Status != http.StatusNotFound ||
			heu.Status != http.StatusOK || heu.Media != "application/json" {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "gzip-all-reads", explain: func(s step, ref, heu *answer) bool {
		if s.header["Accept-Encoding"] != "gzip" || ref.Encoding != "" || heu.Encoding != "gzip" {
			return false
		}
		heu.Encoding = ""
		return true
	}},
	{id: "batch-entity-snapshot", explain: func(s step, ref, heu *answer) bool {
		// Eureka serialises a 409's responseEntity after the whole batch
		// ran: later items' changes to the same instance show in it.
		if !strings.Contains(s.path, "/peerreplication/batch") || ref.Status != http.StatusOK || heu.Status != http.StatusOK {
			return false
		}
		rl, hl := responseList(ref.Tree), responseList(heu.Tree)
		if len(rl) != len(hl) {
			return false
		}
		changed := false
		for i := range rl {
			ri, hi := rl[i].(map[string]any), hl[i].(map[string]any)
			re, _ := ri["responseEntity"].(map[string]any)
			he, _ := hi["responseEntity"].(map[string]any)
			if re == nil || he == nil || fmt.Sprint(ri["statusCode"]) != "409" || fmt.Sprint(hi["statusCode"]) != "409" {
				continue
			}
			for _, k := range []string{"actionType", "status", "overriddenStatus"} {
				if fmt.Sprint(re[k]) != fmt.Sprint(he[k]) {
					he[k] = re[k]
					changed = true
				}
			}
		}
		return changed
	}},
	{id: "lenient-json", explain: func(s step, ref, heu *answer) bool {
		// Eureka's JSON decoder rejects what Heureka accepts; such
		// requests go to the scratch node.
		if !s.scratch || !cannotParse(ref) || heu.Status != http.StatusNoContent {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "body-decode-400", explain: func(s step, ref, heu *answer) bool {
		// Eureka answers in the request's format, Heureka in plain text
		// with the decoder's detail.
		if !cannotParse(ref) || heu.Status != http.StatusBadRequest || heu.Media != "text/plain" {
			return false
		}
		*heu = *ref
		return true
	}},
	{id: "bad-param-400", explain: func(s step, ref, heu *answer) bool {
		// Eureka answers 500 (an unhandled exception) to a bad
		// lastDirtyTimestamp or status value; Heureka a plain-text 400.
		q := s.path[strings.Index(s.path+"?", "?"):]
		bad := strings.Contains(q, "lastDirtyTimestamp=") || strings.HasSuffix(strings.Split(s.path, "?")[0], "/status")
		if !bad || ref.Status != http.StatusInternalServerError || heu.Status != http.StatusBadRequest ||
			heu.Media != "text/plain" {
			return false
		}
		*heu = *ref
		return true
	}},
}

// cannotParse reports whether a is Eureka's answer to a body its decoder
// rejects: 400 {"error": "cannot parse request body"} (or the XML
// equivalent).
func cannotParse(a *answer) bool {
	return a.Status == http.StatusBadRequest && strings.Contains(string(a.Body), "cannot parse request body")
}

// responseList is a batch answer's responseList.
func responseList(tree any) []any {
	m, _ := tree.(map[string]any)
	l, _ := m["responseList"].([]any)
	for _, e := range l {
		if _, ok := e.(map[string]any); !ok {
			return nil
		}
	}
	return l
}

// statusRoot returns the root element of an XML /status answer.
func statusRoot(tree any) map[string]any {
	m, _ := tree.(map[string]any)
	if len(m) != 1 {
		return nil
	}
	for _, v := range m {
		root, _ := first(v)
		return root
	}
	return nil
}

// first returns the only element of an XML element list.
func first(v any) (map[string]any, bool) {
	l, _ := v.([]any)
	if len(l) != 1 {
		return nil, false
	}
	m, ok := l[0].(map[string]any)
	return m, ok
}

// instanceOf returns the instance of a JSON {"instance": …} or XML
// <instance> answer.
func instanceOf(tree any) map[string]any {
	m, _ := tree.(map[string]any)
	switch v := m["instance"].(type) {
	case map[string]any:
		return v
	case []any:
		if len(v) == 1 {
			in, _ := v[0].(map[string]any)
			return in
		}
	}
	return nil
}

// overriddenKey is the name of the override field: overriddenStatus in
// JSON, overriddenstatus in XML.
func overriddenKey(inst map[string]any) string {
	if _, ok := inst["overriddenstatus"]; ok {
		return "overriddenstatus"
	}
	return "overriddenStatus"
}

// upperField upper-cases every value of the named field in tree and
// reports whether that changed any.
func upperField(tree any, name string) bool {
	changed := false
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == name {
					switch s := c.(type) {
					case string:
						if u := strings.ToUpper(s); u != s {
							x[k], changed = u, true
						}
					case []any: // XML
						for i, e := range s {
							if str, ok := e.(string); ok && strings.ToUpper(str) != str {
								s[i], changed = strings.ToUpper(str), true
							}
						}
					}
					continue
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(tree)
	return changed
}

// knownDiffByID returns the explanation of a README row, or nil.
func knownDiffByID(id string) *knownDiff {
	for i := range knownDiffs {
		if knownDiffs[i].id == id {
			return &knownDiffs[i]
		}
	}
	return nil
}
