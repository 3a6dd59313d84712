package main

// Federation options: this cluster's region and the remote regions every
// node pulls (package federation, docs/federation.md). The Spring Cloud
// Eureka server's keys map onto them, so that a migrated configuration
// keeps its remote regions:
//
//	eureka.server.remote-region-urls-with-name.<region>: <url>   --remote-region <region>=<url>
//	eureka.remoteRegionUrlsWithName: "<region>;<url>,…"         (Netflix spelling, same)
//	eureka.server.remote-region-app-whitelist.<region>: A,B      --remote-region-apps <region>=A,B
//	eureka.server.remote-region-registry-fetch-interval (s)      --region-pull-interval
//	eureka.server.disable-transparent-fallback-to-other-region   --region-transparent-fallback (inverted)
//	eureka.client.region                                         --region
//
// --region-wan-links (heureka.region-wan-links) has no Eureka key: Eureka
// servers each pull every region.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heureka/heureka/federation"
)

// Regions are the federation settings of Config.
type Regions struct {
	// Region is this cluster's region name, what other regions' clients
	// ask for in ?regions=. --region, HEUREKA_REGION, default "us-east-1"
	// (Eureka's).
	Region string
	// RemoteRegions are the regions to pull, each "name=url" with the
	// remote registry's Eureka base URL. --remote-region (may be
	// repeated, or comma-separated), HEUREKA_REMOTE_REGION, default none.
	RemoteRegions []string
	// RemoteRegionApps are per-region application whitelists,
	// "region=APP1,APP2;region2=APP3": only those applications of the
	// region are served. --remote-region-apps, default none (every
	// application).
	RemoteRegionApps string
	// RegionPullInterval is the time between two pulls of a remote region.
	// --region-pull-interval, HEUREKA_REGION_PULL_INTERVAL, default 5s.
	RegionPullInterval time.Duration
	// RegionStaleAfter: a remote region with no successful pull for this
	// long is shown stale (still served). --region-stale-after, default 1m.
	RegionStaleAfter time.Duration
	// RegionDropAfter: a remote region with no successful pull for this
	// long is no longer served. --region-drop-after, default 10m.
	RegionDropAfter time.Duration
	// RegionStream follows a Heureka remote's change stream instead of
	// polling it (a Java Eureka remote is polled).
	// --region-stream, default true.
	RegionStream bool
	// RegionTransparentFallback makes reads without ?regions= carry every
	// remote region (Eureka's default; off here).
	// --region-transparent-fallback, default false.
	RegionTransparentFallback bool
	// RegionWANLinks is how many nodes of the cluster hold each remote
	// region's WAN link; the others follow those over the local network.
	// --region-wan-links, HEUREKA_REGION_WAN_LINKS, default 2, at least 1.
	RegionWANLinks int
}

// DefaultRegions returns federation's defaults: no remote region.
func DefaultRegions() Regions {
	d := federation.DefaultConfig()
	return Regions{Region: d.Region, RegionPullInterval: d.PullInterval, RegionStaleAfter: d.StaleAfter,
		RegionDropAfter: d.DropAfter, RegionTransparentFallback: d.TransparentFallback, RegionStream: d.Stream,
		RegionWANLinks: d.Links}
}

// regionOptions are the federation options, in Usage order.
var regionOptions = []option{
	{
		name: "region", arg: "name", quote: true,
		usage: "this cluster's region (datacenter) name, as other regions' clients name it in ?regions=",
		set: func(c *Config, v string) error {
			c.Region = strings.ToLower(strings.TrimSpace(v))
			fc := federation.DefaultConfig()
			fc.Region = c.Region
			return trimFed(fc.Validate())
		},
		get: func(c Config) string { return c.Region },
	},
	{
		name: "remote-region", arg: "name=url", list: true,
		usage: "a remote region to pull and serve on ?regions= reads: its name and its registry's Eureka URL; may be repeated",
		set: func(c *Config, v string) error {
			var out []string
			for _, e := range splitList(v) {
				r, err := federation.ParseRemote(e)
				if err != nil {
					return trimFed(err)
				}
				out = append(out, r.Name+"="+r.URL)
			}
			c.RemoteRegions = out
			return nil
		},
		get: func(c Config) string {
			shown := make([]string, len(c.RemoteRegions))
			for i, r := range c.RemoteRegions {
				name, u, _ := strings.Cut(r, "=")
				shown[i] = name + "=" + redactURL(u) // no password in logs
			}
			return strings.Join(shown, ",")
		},
	},
	{
		name: "remote-region-apps", arg: "region=APPS;…", quote: true,
		usage: "serve only these applications of a remote region, e.g. \"dc2=ORDERS,USERS;dc3=PAYMENTS\" (Eureka's remote-region-app-whitelist)",
		set: func(c *Config, v string) error {
			if _, err := parseRegionApps(v); err != nil {
				return err
			}
			c.RemoteRegionApps = strings.TrimSpace(v)
			return nil
		},
		get: func(c Config) string { return c.RemoteRegionApps },
	},
	durationOpt("region-pull-interval", "time between two pulls of each remote region", func(c *Config) *time.Duration { return &c.RegionPullInterval }),
	durationOpt("region-stale-after", "a remote region with no successful pull for this long is shown stale (still served)", func(c *Config) *time.Duration { return &c.RegionStaleAfter }),
	durationOpt("region-drop-after", "a remote region with no successful pull for this long is no longer served", func(c *Config) *time.Duration { return &c.RegionDropAfter }),
	boolOpt("region-stream", "follow a Heureka remote region's change stream (changes cross in well under a second) instead of polling it; Java Eureka remotes are polled", func(c *Config) *bool { return &c.RegionStream }),
	{
		name: "region-wan-links", arg: "n",
		usage: "how many nodes of the cluster hold each remote region's WAN link (chosen by the cluster); the others follow them over the local network",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return fmt.Errorf("%q: want a whole number of nodes, at least 1", v)
			}
			c.RegionWANLinks = n
			return nil
		},
		get: func(c Config) string { return strconv.Itoa(c.RegionWANLinks) },
	},
	boolOpt("region-transparent-fallback", "serve every remote region on reads without ?regions= too (Eureka's default; a remote region's pull still gets local data only)", func(c *Config) *bool { return &c.RegionTransparentFallback }),
}

// trimFed drops the package prefix of a federation error for a flag
// message.
func trimFed(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.TrimPrefix(err.Error(), federation.ErrConfig.Error()+": "))
}

// federationConfig is the federation configuration of c; ok is false when
// no remote region is configured.
func (r Regions) federationConfig(deltaRetention time.Duration) (federation.Config, bool, error) {
	fc := federation.DefaultConfig()
	fc.Region = r.Region
	fc.PullInterval = r.RegionPullInterval
	fc.StaleAfter = r.RegionStaleAfter
	fc.DropAfter = r.RegionDropAfter
	fc.TransparentFallback = r.RegionTransparentFallback
	fc.Stream = r.RegionStream
	fc.Links = r.RegionWANLinks
	fc.RequestTimeout = min(fc.RequestTimeout, r.RegionStaleAfter)
	fc.DeltaRetention = deltaRetention // remote changes stay as long as local ones
	apps, err := parseRegionApps(r.RemoteRegionApps)
	if err != nil {
		return fc, false, err
	}
	for _, s := range r.RemoteRegions {
		rr, err := federation.ParseRemote(s)
		if err != nil {
			return fc, false, err
		}
		rr.Apps = apps[rr.Name]
		delete(apps, rr.Name)
		fc.Remotes = append(fc.Remotes, rr)
	}
	for name := range apps {
		return fc, false, fmt.Errorf("--remote-region-apps names region %q, which no --remote-region configures", name)
	}
	if err := fc.Validate(); err != nil {
		return fc, false, err
	}
	return fc, len(fc.Remotes) > 0, nil
}

// validate reports what is wrong with the federation settings.
func (r Regions) validate(deltaRetention time.Duration) []error {
	if _, _, err := r.federationConfig(deltaRetention); err != nil {
		return []error{fmt.Errorf("federation options (--region, --remote-region, --region-*): %v", trimFed(err))}
	}
	return nil
}

// parseRegionApps parses "region=APP1,APP2;region2=APP3" into upper-case
// application names by lower-case region.
func parseRegionApps(v string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, part := range strings.Split(v, ";") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, list, ok := strings.Cut(part, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		apps := splitList(list)
		if !ok || name == "" || len(apps) == 0 {
			return nil, fmt.Errorf("%q: want region=APP1,APP2, regions separated by ';'", part)
		}
		for _, a := range apps {
			out[name] = append(out[name], strings.ToUpper(a))
		}
	}
	return out, nil
}

// springRegionApps handles eureka.server.remote-region-app-whitelist:
// Spring's mapping of region → applications (a comma-separated string or a
// list).
func springRegionApps(l *fileLoader, at keyRef, v *yaml.Node) {
	if v.Kind != yaml.MappingNode {
		l.errorf(at, "wrong type: want a mapping of region names to application lists")
		return
	}
	var parts []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, a := deref(v.Content[i]), deref(v.Content[i+1])
		var apps []string
		switch {
		case k.Kind == yaml.ScalarNode && a.Kind == yaml.ScalarNode:
			apps = splitList(a.Value)
		case k.Kind == yaml.ScalarNode && a.Kind == yaml.SequenceNode:
			for _, e := range a.Content {
				if e = deref(e); e.Kind == yaml.ScalarNode {
					apps = append(apps, e.Value)
				}
			}
		default:
			l.errorf(at, "wrong type: want a mapping of region names to application lists")
			return
		}
		parts = append(parts, k.Value+"="+strings.Join(apps, ","))
	}
	sort.Strings(parts)
	text := strings.Join(parts, ";")
	if _, err := parseRegionApps(text); err != nil {
		l.errs = append(l.errs, invalidValue(fmt.Sprintf("%s:%d: %s", l.file, at.line, at.path), text, false, err))
		return
	}
	l.assigns = append(l.assigns, assignment{field: "remote-region-apps", at: at, text: text})
}

// springRemoteRegions handles eureka.server.remote-region-urls-with-name:
// Spring's mapping of region → URL, or Netflix's "region;url,region;url"
// string.
func springRemoteRegions(l *fileLoader, at keyRef, v *yaml.Node) {
	var pairs []string
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, u := deref(v.Content[i]), deref(v.Content[i+1])
			if k.Kind != yaml.ScalarNode || u.Kind != yaml.ScalarNode {
				l.errorf(at, "wrong type: want a mapping of region names to URLs")
				return
			}
			pairs = append(pairs, k.Value+"="+u.Value)
		}
	default:
		s, ok := l.scalar(at, v)
		if !ok {
			return
		}
		for _, e := range splitList(s) {
			name, u, ok := strings.Cut(e, ";")
			if !ok {
				l.errorf(at, "invalid value %q: want region;url pairs separated by commas", e)
				return
			}
			pairs = append(pairs, strings.TrimSpace(name)+"="+strings.TrimSpace(u))
		}
	}
	sort.Strings(pairs)
	text := strings.Join(pairs, ",")
	o, _ := optionByName("remote-region")
	var scratch Config
	if err := o.set(&scratch, text); err != nil {
		l.errs = append(l.errs, invalidValue(fmt.Sprintf("%s:%d: %s", l.file, at.line, at.path), text, false, err))
		return
	}
	l.assigns = append(l.assigns, assignment{field: "remote-region", at: at, text: text})
}

// springNoFallback handles disable-transparent-fallback-to-other-region,
// the inverse of --region-transparent-fallback. Eureka's default is false
// (fallback on); Heureka's default is off, so only an explicit key counts.
func springNoFallback(l *fileLoader, at keyRef, v *yaml.Node) {
	if b, ok := springValue(l, at, v, parseBool); ok {
		l.assigns = append(l.assigns, assignment{field: "region-transparent-fallback", at: at, text: strconv.FormatBool(!b)})
	}
}

// printRegions prints GET /admin/regions: this cluster's region, then a
// row per remote region.
func printRegions(ctx context.Context, c *nodeClient, w io.Writer, asJSON bool) error {
	var rep federation.Report
	doc, err := c.getJSON(ctx, "/admin/regions", &rep)
	if err != nil {
		return err
	}
	if asJSON {
		return writeIndented(w, doc)
	}
	if len(rep.Remotes) == 0 {
		_, err := fmt.Fprintf(w, "Region %s; no remote region is configured (--remote-region)\n", orDash(rep.Region))
		return err
	}
	ready := "every remote region loaded"
	if !rep.Ready {
		ready = "not every remote region loaded yet: ?regions= reads answer 403"
	}
	fallback := "off"
	if rep.TransparentFallback {
		fallback = "on"
	}
	fmt.Fprintf(w, "Region %s; %s; transparent fallback %s\n\n", rep.Region, ready, fallback)
	now := time.Now()
	tw := table(w)
	fmt.Fprintln(tw, "REGION\tSTATE\tINSTANCES\tLAST SUCCESS\tLAST CHANGE\tVIA\tURL\tLAST ERROR")
	for _, r := range rep.Remotes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.State, r.Instances, ago(r.LastSuccess, now),
			ago(r.LastChange, now), via(r), redactURL(r.URL), orDash(r.LastError))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printFallbacks(w, rep.Remotes)
}

// printFallbacks says, below the table, why this node follows a region
// over the WAN itself though it holds none of the region's WAN links
// (Via fallback): the relays it set aside and why, or that relays are off
// (auth on, no gossip key). Nothing when no region is on fallback.
func printFallbacks(w io.Writer, remotes []federation.RegionStatus) error {
	var lines []string
	for _, r := range remotes {
		if r.Via != federation.ViaFallback {
			continue
		}
		why := r.ViaReason
		if strings.TrimSpace(why) == "" {
			why = "no relay is usable"
		}
		lines = append(lines, fmt.Sprintf("  %s (links %s): %s\n", r.Name, orDash(strings.Join(r.Links, ", ")), why))
	}
	if len(lines) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\nOn fallback: this node holds no WAN link to these regions but follows them over the WAN itself, because\n%s",
		strings.Join(lines, ""))
	return err
}

// via says how the node follows a region: "wan" (it holds a WAN link),
// "relay <member>" or "fallback (wan)" (no relay answered).
func via(r federation.RegionStatus) string {
	switch r.Via {
	case federation.ViaRelay:
		return "relay " + r.Relay
	case federation.ViaFallback:
		return "fallback (wan)"
	case "":
		return "-"
	}
	return string(r.Via)
}
