package client

// Eureka's JSON documents, as far as the client needs them: the
// registration body it sends, and the one-application and VIP documents
// it reads. The server-side package eureka has faster, complete codecs,
// but it brings the registry's actors (and protoactor and Prometheus)
// with it; these few structs keep a Go service's dependencies to the
// standard library. Decoding is lenient the way Eureka's own decoders are
// (see the protocol spec): numbers or strings for numbers and booleans, a
// single object where an array is expected.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// myDataCenter is the data center every non-AWS client registers with.
const myDataCenter = "com.netflix.appinfo.InstanceInfo$MyDataCenterInfo"

// wireInstance is an instance in Eureka's JSON.
type wireInstance struct {
	InstanceID         string         `json:"instanceId,omitempty"`
	HostName           string         `json:"hostName"`
	App                string         `json:"app"`
	IPAddr             string         `json:"ipAddr"`
	Status             string         `json:"status"`
	OverriddenStatus   string         `json:"overriddenStatus,omitempty"`
	Port               *wirePort      `json:"port,omitempty"`
	SecurePort         *wirePort      `json:"securePort,omitempty"`
	DataCenterInfo     wireDataCenter `json:"dataCenterInfo"`
	LeaseInfo          *wireLease     `json:"leaseInfo,omitempty"`
	Metadata           map[string]lax `json:"metadata,omitempty"`
	HomePageURL        string         `json:"homePageUrl,omitempty"`
	StatusPageURL      string         `json:"statusPageUrl,omitempty"`
	HealthCheckURL     string         `json:"healthCheckUrl,omitempty"`
	VIPAddress         string         `json:"vipAddress,omitempty"`
	SecureVIPAddress   string         `json:"secureVipAddress,omitempty"`
	LastDirtyTimestamp lax            `json:"lastDirtyTimestamp,omitempty"`
}

// wirePort is {"$":8080,"@enabled":"true"}.
type wirePort struct {
	Number  laxInt `json:"$"`
	Enabled lax    `json:"@enabled"`
}

// laxInt is a number read like lax and written as a JSON number.
type laxInt struct{ lax }

func (l laxInt) MarshalJSON() ([]byte, error) {
	if _, err := strconv.Atoi(string(l.lax)); err != nil {
		return nil, fmt.Errorf("client: %q is not a number", string(l.lax))
	}
	return []byte(l.lax), nil
}

// wireDataCenter is {"@class":…,"name":…}.
type wireDataCenter struct {
	Class string `json:"@class"`
	Name  string `json:"name"`
}

// wireLease is the part of leaseInfo a client sends.
type wireLease struct {
	RenewalIntervalInSecs int64 `json:"renewalIntervalInSecs"`
	DurationInSecs        int64 `json:"durationInSecs"`
}

// lax is a JSON scalar read as its text, whether it came as a string, a
// number or a boolean (null is ""); it is written as a string.
type lax string

func (l *lax) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = lax(s)
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		*l = "" // not a scalar: nothing the client uses
	default:
		*l = lax(b)
	}
	return nil
}

// one is a list that Eureka may write as a single object.
type one[T any] []T

func (o *one[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*o = nil
		return nil
	case len(b) > 0 && b[0] == '[':
		return json.Unmarshal(b, (*[]T)(o))
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = []T{v}
	return nil
}

// wireApplication is {"name":…,"instance":[…]}.
type wireApplication struct {
	Name     string            `json:"name"`
	Instance one[wireInstance] `json:"instance"`
}

// registration is the body of a registration.
type registration struct {
	Instance *wireInstance `json:"instance"`
}

// encodeRegistration returns the JSON registration body of in, with the
// lease terms and the lastDirtyTimestamp (epoch milliseconds) given.
func encodeRegistration(in *Instance, renewSecs, leaseSecs, dirty int64) ([]byte, error) {
	w := &wireInstance{
		InstanceID:         in.InstanceID,
		HostName:           in.HostName,
		App:                strings.ToUpper(in.App),
		IPAddr:             in.IPAddr,
		Status:             string(in.Status),
		OverriddenStatus:   string(StatusUnknown),
		Port:               &wirePort{Number: laxInt{lax(strconv.Itoa(in.Port))}, Enabled: "true"},
		SecurePort:         &wirePort{Number: laxInt{lax(strconv.Itoa(in.SecurePort))}, Enabled: lax(strconv.FormatBool(in.SecurePort > 0))},
		DataCenterInfo:     wireDataCenter{Class: myDataCenter, Name: "MyOwn"},
		LeaseInfo:          &wireLease{RenewalIntervalInSecs: renewSecs, DurationInSecs: leaseSecs},
		HomePageURL:        in.HomePageURL,
		StatusPageURL:      in.StatusPageURL,
		HealthCheckURL:     in.HealthCheckURL,
		VIPAddress:         in.VIPAddress,
		SecureVIPAddress:   in.SecureVIPAddress,
		LastDirtyTimestamp: lax(strconv.FormatInt(dirty, 10)),
	}
	if in.SecurePort == 0 {
		w.SecurePort.Number = laxInt{"443"} // Eureka's placeholder for a disabled port
	}
	if len(in.Metadata) > 0 {
		w.Metadata = make(map[string]lax, len(in.Metadata))
		for k, v := range in.Metadata {
			w.Metadata[k] = lax(v)
		}
	}
	return json.Marshal(registration{Instance: w})
}

// MarshalJSON writes lax as a JSON string.
func (l lax) MarshalJSON() ([]byte, error) { return json.Marshal(string(l)) }

// instance converts a decoded instance to the client's type.
func (w *wireInstance) instance() Instance {
	in := Instance{
		App:              w.App,
		InstanceID:       w.InstanceID,
		HostName:         w.HostName,
		IPAddr:           w.IPAddr,
		Status:           Status(w.Status),
		VIPAddress:       w.VIPAddress,
		SecureVIPAddress: w.SecureVIPAddress,
		HomePageURL:      w.HomePageURL,
		StatusPageURL:    w.StatusPageURL,
		HealthCheckURL:   w.HealthCheckURL,
	}
	if in.InstanceID == "" {
		in.InstanceID = w.HostName // Eureka's id before instanceId existed
	}
	if w.Port != nil && w.Port.Enabled != "false" {
		in.Port, _ = strconv.Atoi(string(w.Port.Number.lax))
	}
	if w.SecurePort != nil && w.SecurePort.Enabled == "true" {
		in.SecurePort, _ = strconv.Atoi(string(w.SecurePort.Number.lax))
	}
	for k, v := range w.Metadata {
		if k == "@class" { // Jackson's marker of an empty map
			continue
		}
		if in.Metadata == nil {
			in.Metadata = map[string]string{}
		}
		in.Metadata[k] = string(v)
	}
	return in
}

// instances converts the instances of apps, in document order.
func instances(apps []wireApplication) []Instance {
	out := []Instance{}
	for _, a := range apps {
		for i := range a.Instance {
			out = append(out, a.Instance[i].instance())
		}
	}
	return out
}

// decodeApp decodes a one-application document, {"application":{…}}.
func decodeApp(b []byte) ([]Instance, error) {
	var doc struct {
		Application wireApplication `json:"application"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return instances([]wireApplication{doc.Application}), nil
}

// decodeApps decodes an applications document (a VIP read),
// {"applications":{…,"application":[…]}}.
func decodeApps(b []byte) ([]Instance, error) {
	var doc struct {
		Applications struct {
			Application one[wireApplication] `json:"application"`
		} `json:"applications"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return instances(doc.Applications.Application), nil
}
