package main

// The commands for people: members, apps and status ask a running node over
// HTTP, through the endpoints any client uses (/cluster/members,
// /eureka/apps, /eureka/apps/{app}, /eureka/status, and
// /admin/self-preservation for nodes whose status lacks it), and print what
// they learn as aligned tables. --json prints the node's own JSON document
// instead, indented, for scripts: its fields are the documented API, the same
// as every client reads.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// clientTimeout bounds one request of a client command.
const clientTimeout = 10 * time.Second

// maxResponse bounds what a client command reads from a node (a full
// registry of 100k instances is about 100 MB of JSON).
const maxResponse = 1 << 30

// clientOptions are the flags every client command takes.
type clientOptions struct {
	addr string
	json bool
}

// clientCommands returns members, apps and status.
func clientCommands(getenv func(string) string) []*cobra.Command {
	def := getenv("HEUREKA_ADDR")
	if def == "" {
		def = defaultAddr
	}
	add := func(cmd *cobra.Command) *clientOptions {
		o := &clientOptions{}
		cmd.Flags().StringVar(&o.addr, "addr", def,
			"the node to ask, http://host:port (credentials as http://user:pass@host:port, or in HEUREKA_USER and HEUREKA_PASSWORD; env HEUREKA_ADDR)")
		cmd.Flags().BoolVar(&o.json, "json", false, "print the node's JSON document instead of a table")
		return o
	}
	// do runs fn against the node named by o, turning its error into a
	// failure (exit status 1).
	do := func(cmd *cobra.Command, o *clientOptions, fn func(ctx context.Context, c *nodeClient, w io.Writer) error) error {
		c, err := newNodeClient(o.addr, getenv)
		if err != nil {
			return usageError(err)
		}
		if err := fn(cmd.Context(), c, cmd.OutOrStdout()); err != nil {
			return failure(err)
		}
		return nil
	}

	members := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's members as a running node sees them",
		Args:  cobra.NoArgs,
	}
	mo := add(members)
	members.RunE = func(cmd *cobra.Command, _ []string) error {
		return do(cmd, mo, func(ctx context.Context, c *nodeClient, w io.Writer) error {
			return printMembers(ctx, c, w, mo.json)
		})
	}

	apps := &cobra.Command{
		Use:   "apps [APP]",
		Short: "List the registered applications, or the instances of one",
		Args:  cobra.MaximumNArgs(1),
	}
	ao := add(apps)
	apps.RunE = func(cmd *cobra.Command, args []string) error {
		return do(cmd, ao, func(ctx context.Context, c *nodeClient, w io.Writer) error {
			if len(args) == 1 {
				return printApp(ctx, c, w, args[0], ao.json)
			}
			return printApps(ctx, c, w, ao.json)
		})
	}

	status := &cobra.Command{
		Use:   "status",
		Short: "Show a running node's status, replicas, self-preservation and eviction holds",
		Args:  cobra.NoArgs,
	}
	so := add(status)
	status.RunE = func(cmd *cobra.Command, _ []string) error {
		return do(cmd, so, func(ctx context.Context, c *nodeClient, w io.Writer) error {
			return printStatus(ctx, c, w, so.json)
		})
	}
	regions := &cobra.Command{
		Use:   "regions",
		Short: "Show this cluster's region and each remote region's state, lag, last change and instances",
		Args:  cobra.NoArgs,
	}
	ro := add(regions)
	regions.RunE = func(cmd *cobra.Command, _ []string) error {
		return do(cmd, ro, func(ctx context.Context, c *nodeClient, w io.Writer) error {
			return printRegions(ctx, c, w, ro.json)
		})
	}
	return []*cobra.Command{members, apps, status, regions}
}

// nodeClient asks one node.
type nodeClient struct {
	base     *url.URL // scheme and host, no credentials, no path
	user     string
	password string
	http     *http.Client
}

// newNodeClient returns a client of the node at addr: a URL (http or https),
// or a bare host:port. A Eureka service URL (http://host:8761/eureka/) works
// too. Credentials come from the URL, else from HEUREKA_USER and
// HEUREKA_PASSWORD.
func newNodeClient(addr string, getenv func(string) string) (*nodeClient, error) {
	s := strings.TrimSpace(addr)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--addr: want a URL such as %s, got %q", defaultAddr, redactURL(addr))
	}
	c := &nodeClient{http: &http.Client{Timeout: clientTimeout}}
	if u.User != nil {
		c.user = u.User.Username()
		c.password, _ = u.User.Password()
		u.User = nil
	} else {
		c.user, c.password = getenv("HEUREKA_USER"), getenv("HEUREKA_PASSWORD")
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/eureka/v2")
	p = strings.TrimSuffix(p, "/eureka")
	u.Path, u.RawPath, u.RawQuery, u.Fragment = p, "", "", ""
	c.base = u
	return c, nil
}

// redactURL hides the password of a URL given on the command line.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}

// statusError is a node's answer other than 200.
type statusError struct {
	url  string
	code int
	msg  string // the first line of the body
}

func (e *statusError) Error() string {
	s := fmt.Sprintf("%s: %d %s", e.url, e.code, http.StatusText(e.code))
	if e.msg != "" {
		s += ": " + e.msg
	}
	if e.code == http.StatusUnauthorized {
		s += " (give credentials in --addr as http://user:pass@host:8761, or in HEUREKA_USER and HEUREKA_PASSWORD)"
	}
	return s
}

// get returns the body of GET path (JSON).
func (c *nodeClient) get(ctx context.Context, path string) ([]byte, error) {
	u := c.base.String() + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if c.user != "" || c.password != "" {
		req.SetBasicAuth(c.user, c.password)
	}
	res, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("cannot reach a node at %s: %v (is heureka running there? --addr names the node)", c.base, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the answer: %w", u, err)
	}
	if res.StatusCode != http.StatusOK {
		msg, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		return nil, &statusError{url: u, code: res.StatusCode, msg: msg}
	}
	return body, nil
}

// getJSON decodes the body of GET path into v.
func (c *nodeClient) getJSON(ctx context.Context, path string, v any) ([]byte, error) {
	body, err := c.get(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("%s%s: not the JSON a heureka node sends: %w", c.base, path, err)
	}
	return body, nil
}

// writeIndented writes a JSON document indented, with a final newline.
func writeIndented(w io.Writer, doc []byte) error {
	var b bytes.Buffer
	if err := json.Indent(&b, doc, "", "  "); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}
