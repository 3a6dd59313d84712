package reference_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// answer is one server's reply to one request, parsed for comparison.
type answer struct {
	// Status is the HTTP status code.
	Status int
	// Media is the Content-Type's media type, lower-cased, without
	// parameters ("" when absent or empty body).
	Media string
	// Encoding is the Content-Encoding header ("" or "gzip").
	Encoding string
	// Body is the body, gunzipped when Encoding is gzip.
	Body []byte
	// Tree is the parsed body: a JSON value (json.Number for numbers), an
	// XML element tree (see xmlTree), the trimmed text of any other body,
	// or nil for an empty body.
	Tree any
}

// readAnswer reads and parses resp (its body is closed).
func readAnswer(resp *http.Response) (answer, error) {
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	a := answer{Status: resp.StatusCode, Encoding: resp.Header.Get("Content-Encoding")}
	if a.Encoding == "gzip" && len(raw) > 0 {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return answer{}, fmt.Errorf("gunzip: %w", err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return answer{}, fmt.Errorf("gunzip: %w", err)
		}
	}
	a.Body = raw
	if ct := resp.Header.Get("Content-Type"); ct != "" && len(raw) > 0 {
		if mt, _, err := mime.ParseMediaType(ct); err == nil {
			a.Media = strings.ToLower(mt)
		} else {
			a.Media = "unparsable:" + ct
		}
	}
	a.Tree = parseBody(a.Media, raw)
	return a, nil
}

// parseBody parses a body by its media type into a generic tree.
func parseBody(media string, raw []byte) any {
	text := strings.TrimSpace(string(raw))
	if text == "" {
		return nil
	}
	switch {
	case strings.HasSuffix(media, "json"):
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return "unparsable JSON (" + err.Error() + "): " + text
		}
		return v
	case strings.HasSuffix(media, "xml"):
		v, err := xmlTree(raw)
		if err != nil {
			return "unparsable XML (" + err.Error() + "): " + text
		}
		return v
	}
	return text
}

// xmlTree parses an XML document into nested maps: an element is a map
// from "@attr" to the attribute's value, from each child element's name to
// the list of such children (in document order), and from "#text" to its
// non-blank text. An element with neither attributes nor children is its
// trimmed text. The root is a map from its name to a one-element list, like
// any element's children.
func xmlTree(raw []byte) (any, error) {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	root := map[string]any{}
	stack := []map[string]any{root}
	texts := []string{""}
	var names []string
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			el := map[string]any{}
			for _, a := range t.Attr {
				el["@"+a.Name.Local] = a.Value
			}
			stack = append(stack, el)
			texts = append(texts, "")
			names = append(names, t.Name.Local)
		case xml.CharData:
			texts[len(texts)-1] += string(t)
		case xml.EndElement:
			el, text := stack[len(stack)-1], strings.TrimSpace(texts[len(texts)-1])
			name := names[len(names)-1]
			stack, texts, names = stack[:len(stack)-1], texts[:len(texts)-1], names[:len(names)-1]
			var v any = el
			switch {
			case len(el) == 0:
				v = text
			case text != "":
				el["#text"] = text
			}
			parent := stack[len(stack)-1]
			list, _ := parent[name].([]any)
			parent[name] = append(list, v)
		}
	}
	if len(root) == 0 {
		return nil, errors.New("no root element")
	}
	return root, nil
}

// comparison holds what the comparator ignores.
type comparison struct {
	// since and until bound the timestamps the servers generate (now, and
	// now plus a lease): two such timestamps compare equal, as the servers
	// ran the same step a few milliseconds apart. A timestamp the client
	// sent (the fixed ones in the cases) is compared exactly.
	since, until time.Time
	// ignoreVersionDelta ignores versions__delta (a delta's counter,
	// bumped on each regeneration; every full fetch says "1" and is
	// compared).
	ignoreVersionDelta bool
}

// timestampKeys are the fields holding epoch milliseconds.
var timestampKeys = map[string]bool{
	"registrationTimestamp": true, "lastRenewalTimestamp": true, "evictionTimestamp": true,
	"serviceUpTimestamp": true, "lastUpdatedTimestamp": true, "lastDirtyTimestamp": true,
}

// diff lists the differences between the reference's answer and
// Heureka's: status, media type, Content-Encoding, then the bodies
// structurally. Nil means equivalent.
func (c comparison) diff(ref, heu answer) []string {
	var out []string
	if ref.Status != heu.Status {
		out = append(out, fmt.Sprintf("status: reference %d, heureka %d", ref.Status, heu.Status))
	}
	if ref.Media != heu.Media {
		out = append(out, fmt.Sprintf("media type: reference %q, heureka %q", ref.Media, heu.Media))
	}
	if ref.Encoding != heu.Encoding {
		out = append(out, fmt.Sprintf("Content-Encoding: reference %q, heureka %q", ref.Encoding, heu.Encoding))
	}
	return c.tree("body", ref.Tree, heu.Tree, out)
}

// tree appends the differences between a and b, found at path, to out.
func (c comparison) tree(path string, a, b any, out []string) []string {
	// The field's name: the last path element, without a list index
	// (an XML element is a list of its occurrences).
	key := path[strings.LastIndex(path, ".")+1:]
	if i := strings.IndexByte(key, '['); i >= 0 {
		key = key[:i]
	}
	if timestampKeys[key] && c.bothServerTimes(a, b) {
		return out
	}
	if key == "versions__delta" && c.ignoreVersionDelta {
		return out
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return append(out, fmt.Sprintf("%s: reference %s, heureka %s", path, show(a), show(b)))
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, dup := av[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inA:
				out = append(out, fmt.Sprintf("%s.%s: only heureka has it: %s", path, k, show(y)))
			case !inB:
				out = append(out, fmt.Sprintf("%s.%s: only the reference has it: %s", path, k, show(x)))
			default:
				out = c.tree(path+"."+k, x, y, out)
			}
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok {
			// XML lists hold one element where JSON has a value; a
			// one-element list against a value is still a difference.
			return append(out, fmt.Sprintf("%s: reference %s, heureka %s", path, show(a), show(b)))
		}
		if ak, bk := keyed(av), keyed(bv); ak != nil && bk != nil {
			// Elements with an identity are matched by it, whatever
			// their order.
			keys := make([]string, 0, len(ak)+len(bk))
			for k := range ak {
				keys = append(keys, k)
			}
			for k := range bk {
				if _, dup := ak[k]; !dup {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				x, inA := ak[k]
				y, inB := bk[k]
				switch {
				case !inA:
					out = append(out, fmt.Sprintf("%s[%s]: only heureka has it", path, k))
				case !inB:
					out = append(out, fmt.Sprintf("%s[%s]: only the reference has it", path, k))
				default:
					out = c.tree(fmt.Sprintf("%s[%s]", path, k), x, y, out)
				}
			}
			return out
		}
		if len(av) != len(bv) {
			return append(out, fmt.Sprintf("%s: reference has %d elements, heureka %d", path, len(av), len(bv)))
		}
		for i := range av {
			out = c.tree(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
		return out
	default:
		if fmt.Sprint(a) != fmt.Sprint(b) || fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b) {
			return append(out, fmt.Sprintf("%s: reference %s, heureka %s", path, show(a), show(b)))
		}
		return out
	}
}

// bothServerTimes reports whether a and b are both timestamps generated by
// the servers during the test.
func (c comparison) bothServerTimes(a, b any) bool {
	in := func(v any) bool {
		ms, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil {
			return false
		}
		t := time.UnixMilli(ms)
		return !t.Before(c.since) && !t.After(c.until)
	}
	return in(a) && in(b)
}

// elemKey names a list element by its identity where Eureka has one: an
// instance by instanceId, an application by name (JSON value or XML child).
func elemKey(v any, i int) string {
	m, ok := v.(map[string]any)
	if !ok {
		return strconv.Itoa(i)
	}
	for _, k := range []string{"instanceId", "name", "id"} {
		switch x := m[k].(type) {
		case string:
			return x
		case []any:
			if len(x) == 1 {
				if s, ok := x[0].(string); ok {
					return s
				}
			}
		}
	}
	return strconv.Itoa(i)
}

// keyed maps the elements of l by their identity (elemKey), or returns
// nil when one has none or two share one: such lists are compared in
// order. Eureka defines no order for instances within an application nor
// for applications, and those have identities.
func keyed(l []any) map[string]any {
	m := make(map[string]any, len(l))
	for i, v := range l {
		k := elemKey(v, i)
		if k == strconv.Itoa(i) {
			return nil
		}
		if _, dup := m[k]; dup {
			return nil
		}
		m[k] = v
	}
	return m
}

// show renders a tree value for a message.
func show(v any) string {
	if v == nil {
		return "nothing"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const limit = 400
	if len(b) > limit {
		return string(b[:limit]) + "…"
	}
	return string(b)
}
