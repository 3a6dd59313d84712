package main

// The layering that builds a Config: the defaults, the YAML file, the
// HEUREKA_* environment and the command-line flags, merged as text by koanf
// and then parsed once, by each option.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// textValue is the pflag.Value of every serve flag: it keeps the text given,
// which loadConfig parses once the layers are merged (so that a flag's value
// is read by the same code, with the same messages, as the environment's
// and the file's). A repeated list flag (--join) accumulates.
type textValue struct {
	text    string
	list    bool
	typ     string // shown by cobra's generated help
	boolean bool
}

func (v *textValue) String() string { return v.text }

func (v *textValue) Set(s string) error {
	if v.list && v.text != "" {
		v.text += "," + s
	} else {
		v.text = s
	}
	return nil
}

func (v *textValue) Type() string { return v.typ }

// IsBoolFlag lets a boolean flag be given without a value.
func (v *textValue) IsBoolFlag() bool { return v.boolean }

// serveFlags returns the flag set of the serve command: one flag per option.
// A boolean flag takes its value only after '=' (--self-preservation=false):
// "--self-preservation false" sets it to true and leaves "false" as an
// argument, which the command rejects with a hint.
func serveFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("heureka", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {}
	def := DefaultConfig()
	for _, o := range options {
		typ := o.arg
		if o.boolean {
			typ = "bool"
		}
		f := fs.VarPF(&textValue{list: o.list, typ: typ, boolean: o.boolean}, o.name, "", o.usage)
		f.DefValue = o.get(def)
		if o.boolean {
			f.NoOptDefVal = "true"
		}
	}
	return fs
}

// ErrHelp is what LoadConfig returns for -h or --help: the caller should
// print Usage.
var ErrHelp = pflag.ErrHelp

// LoadConfig builds a Config from, in increasing precedence: defaults, the
// YAML file named by --config (or HEUREKA_CONFIG), HEUREKA_* environment
// variables, command-line flags. args excludes the program name and the
// subcommand. It returns warnings (e.g. unknown YAML keys, listed by full
// dotted path) and an error for invalid values, each naming the flag,
// variable or file:line key and the bad value.
//
// getenv is normally os.Getenv (nil means os.Getenv); an empty variable counts
// as unset. Flags may be spelled --name or, as Go's flag package had it,
// -name; a repeated --join adds to the list, other repeated flags keep the
// last value. For -h or --help the error is ErrHelp (test with errors.Is) and
// the caller should print Usage. The returned Config has passed Validate.
func LoadConfig(args []string, getenv func(string) string) (Config, []string, error) {
	fs := serveFlags()
	known := map[string]bool{"help": true}
	fs.VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
	if err := fs.Parse(goStyleFlags(args, known)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return Config{}, nil, ErrHelp
		}
		return Config{}, nil, flagError(err)
	}
	if err := noArguments(fs.Args()); err != nil {
		return Config{}, nil, err
	}
	return loadConfig(fs, getenv)
}

// flagError adds the way to the list of flags to a flag parse error.
func flagError(err error) error {
	return fmt.Errorf("%w (run 'heureka help' for the list of flags)", err)
}

// noArguments rejects positional arguments of the serve command; a boolean
// given as a separate argument gets a hint.
func noArguments(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := parseBool(args[0]); err == nil {
		return fmt.Errorf("unexpected argument %q (give a boolean flag its value as --flag=%s)", args[0], args[0])
	}
	return fmt.Errorf("unexpected argument %q (run 'heureka help' for usage)", args[0])
}

// goStyleFlags rewrites the Go-style long flags that earlier releases
// accepted (-name, -name=value) into pflag's --name form. Only names of long
// flags in known are rewritten, so shorthands such as -h stay what they are;
// nothing after "--" is touched.
func goStyleFlags(args []string, known map[string]bool) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if known[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// sources says, for each option, where its winning value came from: "" for
// the default, otherwise the text error messages start with.
type sources map[string]string

// loadConfig merges the layers for the parsed serve flags fs (see
// LoadConfig).
func loadConfig(fs *pflag.FlagSet, getenv func(string) string) (Config, []string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := DefaultConfig()
	k := koanf.New(".")
	from := sources{}
	// merge adds one layer, noting where each of its keys came from.
	merge := func(p koanf.Provider, source func(key string) string) error {
		layer := koanf.New(".")
		if err := layer.Load(p, nil); err != nil {
			return err
		}
		for _, key := range layer.Keys() {
			from[key] = source(key)
		}
		return k.Merge(layer)
	}

	defaults := make(map[string]any, len(options))
	for _, o := range options {
		defaults[o.name] = o.get(cfg)
	}
	if err := merge(confmap.Provider(defaults, "."), func(string) string { return "" }); err != nil {
		return Config{}, nil, err
	}

	// The file named by the flag, else by the environment.
	cfgOpt, _ := optionByName("config")
	path := strings.TrimSpace(getenv(cfgOpt.env()))
	if f := fs.Lookup("config"); f != nil && f.Changed {
		path = strings.TrimSpace(f.Value.String())
	}
	var warnings []string
	if path != "" {
		values, w, err := loadFile(path)
		warnings = append(warnings, w...)
		if err != nil {
			return Config{}, warnings, err
		}
		layer := make(map[string]any, len(values))
		for key, v := range values {
			layer[key] = v.text
		}
		if err := merge(confmap.Provider(layer, "."), func(key string) string { return values[key].source }); err != nil {
			return Config{}, warnings, err
		}
	}

	envNames := make(map[string]string, len(options))
	for _, o := range options {
		if o.name != "config" {
			envNames[o.env()] = o.name
		}
	}
	environ := func() []string {
		var out []string
		for name := range envNames {
			if v := getenv(name); v != "" {
				out = append(out, name+"="+v)
			}
		}
		return out
	}
	byEnv := map[string]string{}
	err := merge(env.Provider(".", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: environ,
		TransformFunc: func(name, v string) (string, any) {
			byEnv[envNames[name]] = name
			return envNames[name], v
		},
	}), func(key string) string { return "environment variable " + byEnv[key] })
	if err != nil {
		return Config{}, warnings, err
	}

	// Only flags given on the command line (ko nil: unchanged flags are
	// skipped), as the text they were given.
	flags := posflag.ProviderWithValue(fs, ".", nil, func(key, v string) (string, any) {
		if key == "config" {
			return "", nil
		}
		return key, v
	})
	if err := merge(flags, func(key string) string { return "--" + key }); err != nil {
		return Config{}, warnings, err
	}

	var errs []error
	for _, o := range options {
		src := from[o.name]
		if o.name == "config" || src == "" {
			continue // the default is already in cfg
		}
		v := k.String(o.name)
		if err := o.set(&cfg, v); err != nil {
			errs = append(errs, invalidValue(src, v, o.masked(), err))
		}
	}
	if len(errs) > 0 {
		return Config{}, warnings, errors.Join(errs...)
	}
	cfg.ConfigFile = path
	cfg.AdvertiseAddr = normalizeAdvertise(cfg.AdvertiseAddr, cfg.GossipAddr)
	if cfg.AdvertiseAddr != "" {
		if err := checkHostPort(cfg.AdvertiseAddr, true); err != nil {
			src := from["advertise-addr"]
			return Config{}, warnings, invalidValue(src, k.String("advertise-addr"), false, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, warnings, err
	}
	return cfg, warnings, nil
}

// normalizeAdvertise turns a bare advertise host into host:<gossip port>.
func normalizeAdvertise(adv, gossip string) string {
	if adv == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(adv); err == nil {
		return adv
	}
	host := strings.TrimSuffix(strings.TrimPrefix(adv, "["), "]")
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return adv // not a bare host; let the check complain
	}
	_, port, err := net.SplitHostPort(gossip)
	if err != nil {
		return adv
	}
	return net.JoinHostPort(host, port)
}
