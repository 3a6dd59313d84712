package federation

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
)

// document is a decoded Eureka applications document (full or delta).
type document struct {
	versionDelta string
	hashcode     string
	instances    []*actors.Instance // in document order, normalized
	// removed names the applications a repair event removes (stream.go).
	removed []string
}

// wireApps is the JSON shape of an applications document; instances are
// kept raw and decoded by package eureka, the server's own decoder, so that
// a remote instance keeps every field a local one has.
type wireApps struct {
	Removed      []string `json:"removed"` // a repair event's (stream.go)
	Applications struct {
		VersionsDelta json.RawMessage `json:"versions__delta"`
		AppsHashcode  string          `json:"apps__hashcode"`
		Application   oneOrMany       `json:"application"`
	} `json:"applications"`
}

// wireApp is one application element.
type wireApp struct {
	Name     string    `json:"name"`
	Instance oneOrMany `json:"instance"`
}

// oneOrMany is a JSON list that Eureka's Jackson codec may also write as a
// single object (one element) or null.
type oneOrMany []json.RawMessage

func (o *oneOrMany) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*o = nil
		return nil
	case len(b) > 0 && b[0] == '[':
		return json.Unmarshal(b, (*[]json.RawMessage)(o))
	}
	*o = oneOrMany{json.RawMessage(b)}
	return nil
}

// decodeApps decodes a JSON applications document.
func decodeApps(body []byte) (*document, error) {
	var w wireApps
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("federation: decoding applications: %w", err)
	}
	d := &document{hashcode: w.Applications.AppsHashcode, removed: w.Removed}
	var vd string
	if err := json.Unmarshal(w.Applications.VersionsDelta, &vd); err != nil {
		d.versionDelta = string(w.Applications.VersionsDelta) // a number
	} else {
		d.versionDelta = vd
	}
	for _, raw := range w.Applications.Application {
		var a wireApp
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("federation: decoding application: %w", err)
		}
		for _, ri := range a.Instance {
			inst, err := eureka.DecodeInstance("application/json", ri)
			if err != nil {
				return nil, fmt.Errorf("federation: decoding an instance of %s: %w", a.Name, err)
			}
			inst.Normalize()
			if inst.App == "" {
				inst.App = a.Name
			}
			d.instances = append(d.instances, inst)
		}
	}
	return d, nil
}
