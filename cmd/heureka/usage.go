package main

import (
	"io"
	"strconv"
	"strings"
)

// Usage writes the help of the serve command, which `heureka help`,
// `heureka -h` and `heureka serve -h` print: the commands, then every flag on
// a line of its own that starts with "--name" (tools parse this list: the
// deployment tests check the manifests' flags against it), followed by its
// meaning, default and environment variable on indented lines.
func Usage(w io.Writer) {
	var b strings.Builder
	b.WriteString(`heureka is a Eureka-compatible service registry.

Usage:
  heureka [serve] [flags]   run the registry (the default subcommand)
  heureka members           list the cluster's members, as a running node sees them
  heureka apps [APP]        list the registered applications, or one application's instances
  heureka status            show a running node's status, self-preservation and eviction holds
  heureka version           print the version and exit (also: heureka --version)
  heureka help [command]    print this help, or a command's, and exit

members, apps and status ask a running node over HTTP: --addr (default
http://127.0.0.1:8761; credentials as http://user:pass@host:8761 or in
HEUREKA_USER and HEUREKA_PASSWORD), --json for the node's own JSON.

Flags may be written --name or -name, with the value after '=' or as the next
argument (booleans take theirs only after '=': --self-preservation=false).
Every flag can also be set with the environment variable shown, or with the same
name as a key in the YAML file given by --config, which also understands the
Spring Cloud Netflix properties (eureka.server.enable-self-preservation,
eureka.server.eviction-interval-timer-in-ms, server.port, ...).
Precedence: flags, then environment, then the file, then the defaults.
Durations use Go syntax (90s, 15m, 1h30m); booleans are true, false, 1 or 0.

Flags:
`)
	def := DefaultConfig()
	for _, o := range options {
		b.WriteString("  --" + o.name)
		if o.arg != "" {
			b.WriteString(" " + o.arg)
		}
		b.WriteString("\n        " + o.usage + "\n        (default ")
		switch {
		case o.defText != "":
			b.WriteString(o.defText)
		case o.get(def) == "":
			b.WriteString("none")
		case o.quote:
			b.WriteString(strconv.Quote(o.get(def)))
		default:
			b.WriteString(o.get(def))
		}
		b.WriteString("; env " + o.env() + ")\n")
	}
	b.WriteString("  -h, --help\n        show this help\n")
	b.WriteString("  -v, --version\n        print the version and exit\n")
	_, _ = io.WriteString(w, b.String())
}
