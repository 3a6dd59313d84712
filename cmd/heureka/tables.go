package main

// What members, apps and status print: the JSON the node sends, decoded
// leniently (Eureka's JSON writes numbers as strings in places, and a single
// element where a list is expected), and the tables made from it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heureka/heureka/httpapi"
)

// text is a JSON scalar (string, number or boolean) read as its text.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		return fmt.Errorf("want a single value, got %.20s", b)
	default:
		*t = text(b)
	}
	return nil
}

// millis reads t as a Unix time in milliseconds; zero for 0 or no value.
func (t text) millis() time.Time {
	n, err := strconv.ParseInt(string(t), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// oneOrMany is a JSON list that may also be written as its single element.
type oneOrMany[T any] []T

func (l *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = nil
		return nil
	case len(b) > 0 && b[0] == '[':
		var s []T
		err := json.Unmarshal(b, &s)
		*l = s
		return err
	}
	var one T
	err := json.Unmarshal(b, &one)
	*l = oneOrMany[T]{one}
	return err
}

// Eureka's documents, as much of them as the tables show.
type (
	eurekaApps struct {
		Applications struct {
			Application oneOrMany[eurekaApp] `json:"application"`
		} `json:"applications"`
	}
	eurekaAppDoc struct {
		Application eurekaApp `json:"application"`
	}
	eurekaApp struct {
		Name     text                      `json:"name"`
		Instance oneOrMany[eurekaInstance] `json:"instance"`
	}
	eurekaInstance struct {
		InstanceID       text            `json:"instanceId"`
		HostName         text            `json:"hostName"`
		IPAddr           text            `json:"ipAddr"`
		Status           text            `json:"status"`
		OverriddenStatus text            `json:"overriddenStatus"`
		Port             eurekaPort      `json:"port"`
		SecurePort       eurekaPort      `json:"securePort"`
		Metadata         map[string]text `json:"metadata"`
		DataCenterInfo   struct {
			Metadata map[string]text `json:"metadata"`
		} `json:"dataCenterInfo"`
		LeaseInfo struct {
			RegistrationTimestamp text `json:"registrationTimestamp"`
			LastRenewalTimestamp  text `json:"lastRenewalTimestamp"`
		} `json:"leaseInfo"`
	}
	eurekaPort struct {
		Number  text `json:"$"`
		Enabled text `json:"@enabled"`
	}
	// member is one row of /cluster/members; selfPreservation is GET
	// /admin/self-preservation, also embedded in /eureka/status; eviction
	// is GET /admin/eviction, also embedded in /eureka/status: the API's
	// own types.
	member           = httpapi.Member
	selfPreservation = httpapi.SelfPreservation
	eviction         = httpapi.Eviction
	// nodeStatus is /eureka/status.
	nodeStatus struct {
		GeneralStats     map[string]text `json:"generalStats"`
		ApplicationStats map[string]text `json:"applicationStats"`
		InstanceInfo     struct {
			InstanceID text            `json:"instanceId"`
			HostName   text            `json:"hostName"`
			IPAddr     text            `json:"ipAddr"`
			Metadata   map[string]text `json:"metadata"`
		} `json:"instanceInfo"`
		IsHealthy        text              `json:"isHeathly"` // sic: Eureka's spelling
		SelfPreservation *selfPreservation `json:"selfPreservation"`
		// Eviction is nil from a node older than the eviction element.
		Eviction *eviction `json:"eviction"`
	}
)

// table returns a tabwriter for aligned columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// ago says how long before now t was, in whole seconds: "1m5s ago".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String() + " ago"
}

// decision is the first words of a self-preservation reason ("engaged",
// "not engaged", "released", "off").
func decision(reason string) string {
	if strings.HasPrefix(reason, "self-preservation is off") {
		return "off"
	}
	if d, _, ok := strings.Cut(reason, ":"); ok {
		return d
	}
	return orDash(reason)
}

func printMembers(ctx context.Context, c *nodeClient, w io.Writer, asJSON bool) error {
	var ms []member
	doc, err := c.getJSON(ctx, "/cluster/members", &ms)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, doc)
	}
	tw := table(w)
	fmt.Fprintln(tw, "NAME\tSTATE\tGOSSIP ADDRESS\tEUREKA URL\tOWNS\tRENEWALS\tSELF-PRESERVATION")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f%%\t%d\t%s\n", m.Name, m.State, orDash(m.Address), orDash(m.URL),
			100*m.Owned, m.RenewalsLastWindow, decision(m.SelfPreservation))
	}
	return tw.Flush()
}

// statusOrder is the order statuses are counted in.
var statusOrder = []string{"UP", "DOWN", "STARTING", "OUT_OF_SERVICE", "UNKNOWN"}

func printApps(ctx context.Context, c *nodeClient, w io.Writer, asJSON bool) error {
	var doc eurekaApps
	raw, err := c.getJSON(ctx, "/eureka/apps", &doc)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, raw)
	}
	apps := doc.Applications.Application
	slices.SortFunc(apps, func(a, b eurekaApp) int { return strings.Compare(string(a.Name), string(b.Name)) })
	if len(apps) == 0 {
		_, err := fmt.Fprintln(w, "No applications are registered.")
		return err
	}
	tw := table(w)
	fmt.Fprintln(tw, "APPLICATION\tINSTANCES\tSTATUS")
	total := 0
	for _, a := range apps {
		counts := map[string]int{}
		for _, in := range a.Instance {
			counts[string(in.Status)]++
		}
		var parts []string
		for _, s := range statusOrder {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d", s, counts[s]))
				delete(counts, s)
			}
		}
		for _, s := range slices.Sorted(maps.Keys(counts)) {
			parts = append(parts, fmt.Sprintf("%s %d", orDash(s), counts[s]))
		}
		total += len(a.Instance)
		fmt.Fprintf(tw, "%s\t%d\t%s\n", a.Name, len(a.Instance), strings.Join(parts, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\n%d application(s), %d instance(s).\n", len(apps), total)
	return err
}

func printApp(ctx context.Context, c *nodeClient, w io.Writer, name string, asJSON bool) error {
	var doc eurekaAppDoc
	raw, err := c.getJSON(ctx, "/eureka/apps/"+url.PathEscape(name), &doc)
	var se *statusError
	if errors.As(err, &se) && se.code == http.StatusNotFound {
		return fmt.Errorf("no application %q is registered at %s ('heureka apps' lists them)", name, c.base)
	}
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, raw)
	}
	ins := doc.Application.Instance
	slices.SortFunc(ins, func(a, b eurekaInstance) int { return strings.Compare(string(a.InstanceID), string(b.InstanceID)) })
	now := time.Now()
	tw := table(w)
	fmt.Fprintf(tw, "INSTANCE ID\tSTATUS\tHOST\tIP\tPORT\tZONE\tREGISTERED\tLAST RENEWAL\n")
	for _, in := range ins {
		status := string(in.Status)
		if o := string(in.OverriddenStatus); o != "" && o != "UNKNOWN" {
			status += " (override)"
		}
		port := orDash(string(in.Port.Number))
		if in.Port.Enabled == "false" {
			port = "-"
		}
		if in.SecurePort.Enabled == "true" {
			port += ", " + string(in.SecurePort.Number) + " (secure)"
		}
		zone := in.Metadata["zone"]
		if zone == "" {
			zone = in.DataCenterInfo.Metadata["availability-zone"]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.InstanceID, orDash(status), orDash(string(in.HostName)),
			orDash(string(in.IPAddr)), port, orDash(string(zone)),
			ago(in.LeaseInfo.RegistrationTimestamp.millis(), now), ago(in.LeaseInfo.LastRenewalTimestamp.millis(), now))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "\n%s: %d instance(s).\n", doc.Application.Name, len(ins))
	return err
}

// replicaList splits Eureka's replica lists ("u1, u2" and "u1,u2,").
func replicaList(s text) []string {
	var out []string
	for _, e := range strings.Split(string(s), ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

func printStatus(ctx context.Context, c *nodeClient, w io.Writer, asJSON bool) error {
	var st nodeStatus
	raw, err := c.getJSON(ctx, "/eureka/status", &st)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, raw)
	}
	sp := st.SelfPreservation
	if sp == nil { // a node from before /eureka/status carried it
		sp = &selfPreservation{}
		if _, err := c.getJSON(ctx, "/admin/self-preservation", sp); err != nil {
			return err
		}
	}
	tw := table(w)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	row("node", "%s", st.InstanceInfo.InstanceID)
	row("version", "%s", orDash(string(st.InstanceInfo.Metadata["version"])))
	row("asked", "%s", c.base)
	if st.IsHealthy == "true" {
		row("ready", "yes")
	} else {
		row("ready", "no: initial cluster sync in progress; registry reads answer 403")
	}
	g := st.GeneralStats
	row("uptime", "%s", orDash(string(g["server-uptime"])))
	row("environment", "%s", orDash(string(g["environment"])))
	row("memory", "%s in use of %s", orDash(string(g["current-memory-usage"])), orDash(string(g["total-avail-memory"])))
	avail := replicaList(st.ApplicationStats["available-replicas"])
	unavail := replicaList(st.ApplicationStats["unavailable-replicas"])
	row("replicas", "%d available, %d unavailable", len(avail), len(unavail))
	for i, u := range avail {
		k := ""
		if i == 0 {
			k = "  available"
		}
		row(k, "%s", u)
	}
	for i, u := range unavail {
		k := ""
		if i == 0 {
			k = "  unavailable"
		}
		row(k, "%s", u)
	}
	row("self-preservation", "%s", decision(sp.Reason))
	row("  why", "%s", orDash(sp.Reason))
	if sp.Enabled {
		window := time.Duration(sp.WindowSeconds * float64(time.Second))
		row("  expected", "%d renewing clients; engages at or below %d renewals per %v", sp.Expected, sp.Threshold, window)
		row("  measured", "%d renewals in the last window (%d here, %d from %d other member(s))",
			sp.RenewsLastWindow, sp.LocalRenewals, sp.PeerRenewals, max(0, sp.Members-1))
	}
	if ev := st.Eviction; ev != nil {
		printHolds(row, ev, time.Now())
	}
	return tw.Flush()
}

// printHolds prints the eviction rows of status: whether eviction may run,
// then a row per hold, its reason as the key, its detail and when it began
// and ends at the latest as the value.
func printHolds(row func(k, format string, args ...any), ev *eviction, now time.Time) {
	if len(ev.Holds) == 0 {
		row("eviction", "runs: nothing holds it")
		return
	}
	row("eviction", "held by %d hold(s); expired leases are kept until each ends", len(ev.Holds))
	for _, h := range ev.Holds {
		var when []string
		if !h.Since.IsZero() {
			when = append(when, "since "+ago(h.Since, now))
		}
		switch {
		case !h.Until.IsZero() && h.Until.After(now):
			when = append(when, "ends within "+h.Until.Sub(now).Round(time.Second).String())
		case !h.Until.IsZero():
			when = append(when, "ending now")
		}
		extra := ""
		if len(when) > 0 {
			extra = " (" + strings.Join(when, ", ") + ")"
		}
		row("  "+h.Reason, "%s%s", orDash(h.Detail), extra)
	}
}
