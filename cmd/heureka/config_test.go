package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envMap returns a getenv reading m.
func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeYAML writes content to a temporary file and returns its path.
func writeYAML(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "heureka.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// with returns the defaults changed by f.
func with(f func(c *Config)) Config {
	c := DefaultConfig()
	f(&c)
	return c
}

func key(n int) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n)) }

func TestDefaultConfig(t *testing.T) {
	c := DefaultConfig()
	host, _ := os.Hostname()
	if host == "" {
		host = "heureka"
	}
	assert.Equal(t, Config{
		HTTPAddr:                       ":8761",
		GossipAddr:                     ":7946",
		NodeName:                       host,
		EvictionInterval:               60 * time.Second,
		SelfPreservation:               true,
		RenewalPercentThreshold:        0.85,
		RenewalThresholdUpdateInterval: 15 * time.Minute,
		ExpectedClientRenewalInterval:  30 * time.Second,
		RenewalWindow:                  time.Minute,
		ExpectedInitialRenewers:        1,
		DeltaRetention:                 3 * time.Minute,
		DeltaRetentionInterval:         30 * time.Second,
		DeltaMaxBytes:                  128 << 20,
		MaxBodyBytes:                   1 << 20,
		ReadyTimeout:                   30 * time.Second,
		StreamTimeout:                  10 * time.Second,
		TombstoneTTL:                   10 * time.Minute,
		HTTPWriteTimeout:               2 * time.Minute,
		RenewForwardInterval:           time.Second,
		AntiEntropyInterval:            5 * time.Second,
		LogLevel:                       "info",
		LogFormat:                      "text",
		Security: Security{MaxHeaderBytes: 64 << 10, RateLimitBurst: 10, RateLimitFetchRate: 500,
			RateLimitFullFetchRate: 100},
		Regions: Regions{Region: "us-east-1", RegionPullInterval: 5 * time.Second, RegionStaleAfter: time.Minute,
			RegionDropAfter: 10 * time.Minute, RegionStream: true, RegionWANLinks: 2},
	}, c)
	require.NoError(t, c.Validate())

	got, warnings, err := LoadConfig(nil, envMap(nil))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, c, got)
}

func TestLoadConfigFlagsAndEnv(t *testing.T) {
	tests := []struct {
		flag  string // flag name; the env var is derived from it
		value string
		want  Config
	}{
		{"http-addr", "127.0.0.1:9000", with(func(c *Config) { c.HTTPAddr = "127.0.0.1:9000" })},
		{"gossip-addr", "0.0.0.0:9001", with(func(c *Config) { c.GossipAddr = "0.0.0.0:9001" })},
		{"advertise-addr", "10.1.2.3:9001", with(func(c *Config) { c.AdvertiseAddr = "10.1.2.3:9001" })},
		{"advertise-addr", "10.1.2.3", with(func(c *Config) { c.AdvertiseAddr = "10.1.2.3:7946" })},
		{"advertise-addr", "fd00::1", with(func(c *Config) { c.AdvertiseAddr = "[fd00::1]:7946" })},
		{"join", "a:7946, b.example.com ,10.0.0.1:7946", with(func(c *Config) { c.Join = []string{"a:7946", "b.example.com", "10.0.0.1:7946"} })},
		{"eureka-peers", "http://old-1:8761/eureka/, https://u:p@old-2/eureka", with(func(c *Config) {
			c.EurekaPeers = []string{"http://old-1:8761/eureka/", "https://u:p@old-2/eureka"}
		})},
		{"gossip-key", key(16), with(func(c *Config) { c.GossipKey = key(16) })},
		{"gossip-key", key(24), with(func(c *Config) { c.GossipKey = key(24) })},
		{"gossip-key", key(32), with(func(c *Config) { c.GossipKey = key(32) })},
		{"node-name", "node-7", with(func(c *Config) { c.NodeName = "node-7" })},
		{"eviction-interval", "90s", with(func(c *Config) { c.EvictionInterval = 90 * time.Second })},
		{"self-preservation", "false", with(func(c *Config) { c.SelfPreservation = false })},
		{"self-preservation", "0", with(func(c *Config) { c.SelfPreservation = false })},
		{"renewal-percent-threshold", "1", with(func(c *Config) { c.RenewalPercentThreshold = 1 })},
		{"renewal-percent-threshold", "0.5", with(func(c *Config) { c.RenewalPercentThreshold = 0.5 })},
		{"renewal-threshold-update-interval", "1h30m", with(func(c *Config) { c.RenewalThresholdUpdateInterval = 90 * time.Minute })},
		{"expected-client-renewal-interval", "5s", with(func(c *Config) { c.ExpectedClientRenewalInterval = 5 * time.Second })},
		{"renewal-window", "250ms", with(func(c *Config) { c.RenewalWindow = 250 * time.Millisecond })},
		{"expected-initial-renewers", "0", with(func(c *Config) { c.ExpectedInitialRenewers = 0 })},
		{"expected-initial-renewers", "12", with(func(c *Config) { c.ExpectedInitialRenewers = 12 })},
		{"delta-retention", "10m", with(func(c *Config) { c.DeltaRetention = 10 * time.Minute })},
		{"delta-retention-interval", "1s", with(func(c *Config) { c.DeltaRetentionInterval = time.Second })},
		{"lease-duration-doubling", "true", with(func(c *Config) { c.LeaseDurationDoubling = true })},
		{"lease-duration-doubling", "1", with(func(c *Config) { c.LeaseDurationDoubling = true })},
		{"response-cache-update-interval", "30s", with(func(c *Config) { c.ResponseCacheUpdateInterval = 30 * time.Second })},
		{"delta-max-bytes", "256MiB", with(func(c *Config) { c.DeltaMaxBytes = 256 << 20 })},
		{"delta-max-bytes", "0", with(func(c *Config) { c.DeltaMaxBytes = 0 })},
		{"delta-max-bytes", "0MiB", with(func(c *Config) { c.DeltaMaxBytes = 0 })},
		{"max-body-bytes", "4096", with(func(c *Config) { c.MaxBodyBytes = 4096 })},
		{"max-body-bytes", "2MiB", with(func(c *Config) { c.MaxBodyBytes = 2 << 20 })},
		{"max-body-bytes", "64 KiB", with(func(c *Config) { c.MaxBodyBytes = 64 << 10 })},
		{"max-body-bytes", "1.5MiB", with(func(c *Config) { c.MaxBodyBytes = 3 << 19 })},
		{"max-body-bytes", "1MB", with(func(c *Config) { c.MaxBodyBytes = 1_000_000 })}, // SI: powers of 1000
		{"max-body-bytes", "512kib", with(func(c *Config) { c.MaxBodyBytes = 512 << 10 })},
		{"ready-timeout", "0s", with(func(c *Config) { c.ReadyTimeout = 0 })},
		{"ready-timeout", "0", with(func(c *Config) { c.ReadyTimeout = 0 })},
		{"ready-timeout", "2m", with(func(c *Config) { c.ReadyTimeout = 2 * time.Minute })},
		{"stream-timeout", "3s", with(func(c *Config) { c.StreamTimeout = 3 * time.Second })},
		{"tombstone-ttl", "1h", with(func(c *Config) { c.TombstoneTTL = time.Hour })},
		{"tombstone-ttl", "90s", with(func(c *Config) { c.TombstoneTTL = 90 * time.Second })},
		{"http-write-timeout", "10m", with(func(c *Config) { c.HTTPWriteTimeout = 10 * time.Minute })},
		{"http-write-timeout", "500ms", with(func(c *Config) { c.HTTPWriteTimeout = 500 * time.Millisecond })},
		{"renew-forward-interval", "250ms", with(func(c *Config) { c.RenewForwardInterval = 250 * time.Millisecond })},
		{"anti-entropy-interval", "1s", with(func(c *Config) { c.AntiEntropyInterval = time.Second })},
		{"log-level", "debug", with(func(c *Config) { c.LogLevel = "debug" })},
		{"log-level", "WARN", with(func(c *Config) { c.LogLevel = "warn" })},
		{"log-level", "error", with(func(c *Config) { c.LogLevel = "error" })},
		{"log-format", "json", with(func(c *Config) { c.LogFormat = "json" })},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"="+tt.value, func(t *testing.T) {
			for _, form := range []struct {
				name string
				args []string
				env  map[string]string
			}{
				{"--flag=value", []string{"--" + tt.flag + "=" + tt.value}, nil},
				{"-flag value", []string{"-" + tt.flag, tt.value}, nil},
				{"env", nil, map[string]string{"HEUREKA_" + strings.ToUpper(strings.ReplaceAll(tt.flag, "-", "_")): tt.value}},
			} {
				if form.name == "-flag value" && (tt.flag == "self-preservation" || tt.flag == "lease-duration-doubling") {
					continue // booleans take their value only after '='
				}
				got, warnings, err := LoadConfig(form.args, envMap(form.env))
				require.NoError(t, err, form.name)
				assert.Empty(t, warnings, form.name)
				assert.Equal(t, tt.want, got, form.name)
			}
		})
	}
}

func TestLoadConfigBoolFlagWithoutValue(t *testing.T) {
	got, _, err := LoadConfig([]string{"--lease-duration-doubling"}, envMap(nil))
	require.NoError(t, err)
	assert.True(t, got.LeaseDurationDoubling)

	_, _, err = LoadConfig([]string{"--self-preservation", "false"}, envMap(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unexpected argument "false"`)
	assert.Contains(t, err.Error(), "--flag=false")
}

func TestLoadConfigRepeatedFlags(t *testing.T) {
	got, _, err := LoadConfig([]string{"--join", "a:1", "--join=b:2,c", "--node-name", "x", "--node-name", "y"}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"a:1", "b:2", "c"}, got.Join)
	assert.Equal(t, "y", got.NodeName)
}

func TestLoadConfigPrecedence(t *testing.T) {
	file := writeYAML(t, "node-name: from-file\nlog-level: warn\neviction-interval: 5s\nhttp-addr: ':1111'\n")

	t.Run("file overrides defaults", func(t *testing.T) {
		got, _, err := LoadConfig([]string{"--config", file}, envMap(nil))
		require.NoError(t, err)
		assert.Equal(t, with(func(c *Config) {
			c.NodeName, c.LogLevel, c.EvictionInterval, c.HTTPAddr, c.ConfigFile = "from-file", "warn", 5*time.Second, ":1111", file
		}), got)
	})
	t.Run("env overrides file, flag overrides env", func(t *testing.T) {
		env := map[string]string{
			"HEUREKA_CONFIG":            file,
			"HEUREKA_NODE_NAME":         "from-env",
			"HEUREKA_LOG_LEVEL":         "error",
			"HEUREKA_EVICTION_INTERVAL": "7s",
		}
		got, _, err := LoadConfig([]string{"--node-name=from-flag", "--eviction-interval=9s"}, envMap(env))
		require.NoError(t, err)
		assert.Equal(t, "from-flag", got.NodeName) // flag > env > file
		assert.Equal(t, "error", got.LogLevel)     // env > file
		assert.Equal(t, 9*time.Second, got.EvictionInterval)
		assert.Equal(t, ":1111", got.HTTPAddr) // file > default
		assert.Equal(t, file, got.ConfigFile)
	})
	t.Run("--config overrides HEUREKA_CONFIG", func(t *testing.T) {
		other := writeYAML(t, "node-name: other-file\n")
		got, _, err := LoadConfig([]string{"--config=" + other}, envMap(map[string]string{"HEUREKA_CONFIG": file}))
		require.NoError(t, err)
		assert.Equal(t, "other-file", got.NodeName)
		assert.Equal(t, other, got.ConfigFile)
	})
	t.Run("empty env var counts as unset", func(t *testing.T) {
		got, _, err := LoadConfig([]string{"--config", file}, envMap(map[string]string{"HEUREKA_NODE_NAME": ""}))
		require.NoError(t, err)
		assert.Equal(t, "from-file", got.NodeName)
	})
}

// springWant is what spring-*.yaml configure.
func springWant(file string) Config {
	return with(func(c *Config) {
		c.HTTPAddr = ":8762"
		c.ExpectedInitialRenewers = 4
		c.SelfPreservation = false
		c.EvictionInterval = 5 * time.Second
		c.RenewalPercentThreshold = 0.49
		c.RenewalThresholdUpdateInterval = time.Minute
		c.ExpectedClientRenewalInterval = 10 * time.Second
		c.DeltaRetention = 90 * time.Second
		c.DeltaRetentionInterval = 10 * time.Second
		c.ResponseCacheUpdateInterval = 3 * time.Second
		c.ConfigFile = file
	})
}

func TestLoadConfigYAMLFiles(t *testing.T) {
	tests := []struct {
		file     string
		want     Config
		warnings []string // substrings, one per expected warning, in order
	}{
		{
			file: "testdata/heureka.yaml",
			want: Config{
				HTTPAddr:                       "127.0.0.1:18761",
				GossipAddr:                     ":17946",
				AdvertiseAddr:                  "10.0.0.5:17946",
				Join:                           []string{"heureka-0.heureka:7946", "heureka-1.heureka"},
				GossipKey:                      "MDEyMzQ1Njc4OWFiY2RlZg==",
				NodeName:                       "node-a",
				EvictionInterval:               5 * time.Second,
				SelfPreservation:               false,
				RenewalPercentThreshold:        0.5,
				RenewalThresholdUpdateInterval: time.Minute,
				ExpectedClientRenewalInterval:  10 * time.Second,
				RenewalWindow:                  2 * time.Second,
				ExpectedInitialRenewers:        3,
				DeltaRetention:                 90 * time.Second,
				DeltaRetentionInterval:         10 * time.Second,
				DeltaMaxBytes:                  64 << 20,
				LeaseDurationDoubling:          true,
				ResponseCacheUpdateInterval:    3 * time.Second,
				MaxBodyBytes:                   2 << 20,
				ReadyTimeout:                   5 * time.Second,
				StreamTimeout:                  10 * time.Second,
				TombstoneTTL:                   30 * time.Minute,
				HTTPWriteTimeout:               5 * time.Minute,
				RenewForwardInterval:           time.Second,
				AntiEntropyInterval:            5 * time.Second,
				LogLevel:                       "debug",
				LogFormat:                      "json",
				ConfigFile:                     "testdata/heureka.yaml",
				Security:                       DefaultSecurity(),
				Regions:                        DefaultRegions(),
			},
		},
		{
			file: "testdata/spring-nested.yaml",
			want: springWant("testdata/spring-nested.yaml"),
			warnings: []string{
				"spring-nested.yaml:4: ignored: spring.application.name (not used by heureka)",
				"spring-nested.yaml:9: ignored: eureka.instance.hostname (not used by heureka)",
				"ignored: eureka.client.register-with-eureka (not used by heureka)",
				"ignored: eureka.client.fetch-registry (not used by heureka)",
				"ignored: eureka.client.service-url.defaultZone (not used by heureka)",
			},
		},
		{
			file: "testdata/spring-flat.yaml",
			want: springWant("testdata/spring-flat.yaml"),
			warnings: []string{
				"spring-flat.yaml:2: ignored: spring.application.name (not used by heureka)",
				"ignored: eureka.instance.hostname (not used by heureka)",
				"ignored: eureka.client.register-with-eureka (not used by heureka)",
				"ignored: eureka.client.fetch-registry (not used by heureka)",
				"ignored: eureka.client.service-url.defaultZone (not used by heureka)",
			},
		},
		{
			file: "testdata/spring-camel.yaml",
			want: springWant("testdata/spring-camel.yaml"),
			warnings: []string{
				"ignored: spring.application.name (not used by heureka)",
				"ignored: eureka.instance.hostname (not used by heureka)",
				"ignored: eureka.client.registerWithEureka (not used by heureka)",
				"ignored: eureka.client.fetchRegistry (not used by heureka)",
				"ignored: eureka.client.serviceUrl.defaultZone (not used by heureka)",
			},
		},
		{
			file: "testdata/unknown.yaml",
			want: with(func(c *Config) { c.LogLevel = "warn"; c.ConfigFile = "testdata/unknown.yaml" }),
			warnings: []string{
				`unknown.yaml:2: unknown configuration key "colour"`,
				`unknown configuration key "eureka.server.enable-self-preservaton" (did you mean "eureka.server.enable-self-preservation"?)`,
				"ignored: eureka.server.wait-time-in-ms-when-sync-empty (not used by heureka)",
				`unknown configuration key "eureka.server.frobnicate"`,
				"ignored: eureka.client.fetch-registry (not used by heureka)",
				`unknown configuration key "eureka.instance.registry.mystery"`,
				`unknown.yaml:11: unknown configuration key "other.thing.nested"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			got, warnings, err := LoadConfig([]string{"--config", tt.file}, envMap(nil))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			require.Len(t, warnings, len(tt.warnings), "warnings: %q", warnings)
			for i, w := range tt.warnings {
				assert.Contains(t, warnings[i], w)
			}
		})
	}
}

func TestLoadConfigYAMLSpringKeys(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		want     func(c *Config)
		warnings []string
	}{
		{"netflix spelling", "eureka.enableSelfPreservation: false\neureka.evictionIntervalTimerInMs: 1000\n",
			func(c *Config) { c.SelfPreservation = false; c.EvictionInterval = time.Second }, nil},
		{"underscores", "eureka.server.enable_self_preservation: false\n",
			func(c *Config) { c.SelfPreservation = false }, nil},
		{"ms spelling of retention", "eureka.server.retention-time-in-ms-in-delta-queue: 60000\n",
			func(c *Config) { c.DeltaRetention = time.Minute }, nil},
		{"quoted numbers", "eureka.server.eviction-interval-timer-in-ms: \"2000\"\n",
			func(c *Config) { c.EvictionInterval = 2 * time.Second }, nil},
		{"read-only cache off", "eureka.server.use-read-only-response-cache: false\neureka.server.response-cache-update-interval-ms: 1000\n",
			func(c *Config) { c.ResponseCacheUpdateInterval = 0 }, nil},
		{"read-only cache on, default interval", "eureka.server.use-read-only-response-cache: true\n",
			func(c *Config) { c.ResponseCacheUpdateInterval = 30 * time.Second }, nil},
		{"cache interval alone (Spring default is read-only on)", "eureka.server.response-cache-update-interval-ms: 500\n",
			func(c *Config) { c.ResponseCacheUpdateInterval = 500 * time.Millisecond }, nil},
		{"netflix read-only cache", "eureka.shouldUseReadOnlyResponseCache: true\n",
			func(c *Config) { c.ResponseCacheUpdateInterval = 30 * time.Second }, nil},
		{"server port and address", "server:\n  port: 9999\n  address: 127.0.0.1\n",
			func(c *Config) { c.HTTPAddr = "127.0.0.1:9999" }, nil},
		{"server address alone keeps the port", "server.address: ::1\n",
			func(c *Config) { c.HTTPAddr = "[::1]:8761" }, nil},
		{"heureka key beats spring key", "eureka.server.enable-self-preservation: true\nself-preservation: false\n",
			func(c *Config) { c.SelfPreservation = false },
			[]string{"x.yaml:1: eureka.server.enable-self-preservation is overridden by self-preservation (line 2); both set --self-preservation"}},
		{"later spring key wins", "eureka:\n  server:\n    eviction-interval-timer-in-ms: 1000\neureka.server.evictionIntervalTimerInMs: 2000\n",
			func(c *Config) { c.EvictionInterval = 2 * time.Second },
			[]string{"is overridden by eureka.server.evictionIntervalTimerInMs (line 4)"}},
		{"heureka prefix", "heureka:\n  node-name: n1\n  join: a,b\n",
			func(c *Config) { c.NodeName = "n1"; c.Join = []string{"a", "b"} }, nil},
		{"eureka peers as a sequence", "eureka-peers:\n  - http://old-1:8761/eureka/\n  - http://old-2:8761/eureka/\n",
			func(c *Config) { c.EurekaPeers = []string{"http://old-1:8761/eureka/", "http://old-2:8761/eureka/"} }, nil},
		{"null values are unset", "node-name:\neureka.server.enable-self-preservation: ~\n",
			func(c *Config) {}, nil},
		{"anchors and merge keys", "defaults: &d\n  log-level: debug\n<<: *d\n",
			func(c *Config) { c.LogLevel = "debug" },
			[]string{`unknown configuration key "defaults.log-level"`}},
		{"config key ignored", "config: other.yaml\n",
			func(c *Config) {}, []string{"ignored: config"}},
		{"extra documents", "log-level: debug\n---\nlog-level: error\n",
			func(c *Config) { c.LogLevel = "debug" }, []string{"only the first YAML document is used"}},
		{"empty file", "", func(c *Config) {}, nil},
		{"comments only", "# nothing\n", func(c *Config) {}, nil},
		{"other spring sections", "management.endpoints.web.exposure.include: '*'\nlogging:\n  level:\n    root: INFO\n",
			func(c *Config) {}, []string{"ignored: management.endpoints.web.exposure.include", "ignored: logging.level.root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "x.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tt.yaml), 0o600))
			got, warnings, err := LoadConfig([]string{"--config", p}, envMap(nil))
			require.NoError(t, err)
			want := with(tt.want)
			want.ConfigFile = p
			assert.Equal(t, want, got)
			require.Len(t, warnings, len(tt.warnings), "warnings: %q", warnings)
			for i, w := range tt.warnings {
				assert.Contains(t, warnings[i], w)
			}
		})
	}
}

func TestLoadConfigYAMLErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the error
	}{
		{"wrong scalar type", "eureka.server.eviction-interval-timer-in-ms: often\n",
			[]string{"x.yaml:1: eureka.server.eviction-interval-timer-in-ms", `"often"`, "milliseconds"}},
		{"list for a scalar", "eureka:\n  server:\n    enable-self-preservation: [true]\n",
			[]string{"x.yaml:3: eureka.server.enable-self-preservation", "got a list"}},
		{"mapping for a scalar", "http-addr:\n  host: x\n",
			[]string{"x.yaml:1: http-addr", "got a mapping"}},
		{"scalar for a mapping", "eureka:\n  server: true\n",
			[]string{"x.yaml:2: eureka.server", "want a mapping"}},
		{"bad bool", "self-preservation: maybe\n",
			[]string{"x.yaml:1: self-preservation", `"maybe"`, "true, false, 1 or 0"}},
		{"duration without unit", "eviction-interval: 60\n",
			[]string{"eviction-interval", `"60"`, "not a duration"}},
		{"negative ms", "eureka.server.delta-retention-timer-interval-in-ms: -5\n",
			[]string{"delta-retention-timer-interval-in-ms", `"-5"`, "positive"}},
		{"threshold out of range", "eureka.server.renewal-percent-threshold: 1.5\n",
			[]string{"eureka.server.renewal-percent-threshold", `"1.5"`, "at most 1"}},
		{"bad port", "server.port: http\n",
			[]string{"server.port", `"http"`, "0 to 65535"}},
		{"negative renewers", "eureka.instance.registry.expected-number-of-clients-sending-renews: -1\n",
			[]string{"expected-number-of-clients-sending-renews", `"-1"`}},
		{"top level not a mapping", "- a\n- b\n", []string{"top level must be a mapping"}},
		{"syntax error", "a: [b\n", []string{"config file ", "x.yaml:1: did not find expected ',' or ']'"}},
		// The YAML parser blames line 1 (where the mapping starts) here.
		{"syntax error on a later line", "a: 1\nb: [c\nd: 2\n", []string{"x.yaml:2: did not find expected ',' or ']'"}},
		{"tab indentation", "a: 1\nb:\n\tc: 2\n", []string{"x.yaml:3: found character that cannot start any token"}},
		{"unclosed quote", "a: 1\nb: 'x\nc: 2\n", []string{"x.yaml:2: "}},
		{"bad indentation", "a: 1\n  b: 2\n", []string{"x.yaml:2: mapping values are not allowed in this context"}},
		{"error after a multi-line value", "a: [1,\n  2]\nb: |\n  text\nc: d: e\n", []string{"x.yaml:5: mapping values"}},
		{"list of mappings for join", "join:\n  - {a: b}\n", []string{"x.yaml:1: join", "list of strings"}},
		{"value valid in YAML but not as config", "renewal-percent-threshold: 0\n",
			[]string{`x.yaml:1: renewal-percent-threshold: invalid value "0": must be greater than 0 and at most 1`}},
		{"several errors reported together", "eviction-interval: x\nrenewal-window: y\n",
			[]string{"eviction-interval", `"x"`, "renewal-window", `"y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.yaml")
			require.NoError(t, os.WriteFile(p, []byte(tt.yaml), 0o600))
			_, _, err := LoadConfig([]string{"--config", p}, envMap(nil))
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	t.Run("testdata/bad-type.yaml", func(t *testing.T) {
		_, _, err := LoadConfig([]string{"--config", "testdata/bad-type.yaml"}, envMap(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `bad-type.yaml:3: eureka.server.eviction-interval-timer-in-ms: invalid value "often"`)
		assert.Contains(t, err.Error(), "bad-type.yaml:4: eureka.server.enable-self-preservation: wrong type")
	})
	t.Run("missing file", func(t *testing.T) {
		_, _, err := LoadConfig(nil, envMap(map[string]string{"HEUREKA_CONFIG": "testdata/does-not-exist.yaml"}))
		require.Error(t, err)
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.Contains(t, err.Error(), "does-not-exist.yaml")
	})
}

func TestLoadConfigBadValues(t *testing.T) {
	tests := []struct {
		flag, value string
		want        string // substring of the error besides the flag name
	}{
		{"http-addr", "8761", "host:port"},
		{"http-addr", ":http", "port must be a number"},
		{"http-addr", ":70000", "port must be a number"},
		{"gossip-addr", "::1:7946", "host:port"},
		{"advertise-addr", ":7946", "host must not be empty"},
		{"join", "a:b:c", "host:port"},
		{"join", "host:notaport", "port must be a number"},
		{"eureka-peers", "old:8761/eureka", "want http:// or https://"},
		{"eureka-peers", "http:///eureka/", "has no host"},
		{"eureka-peers", "http://a/eureka/,ftp://b/", "want http:// or https://"},
		{"node-name", " ", "must not be empty"},
		{"eviction-interval", "60", "not a duration"},
		{"eviction-interval", "0s", "must be positive"},
		{"eviction-interval", "-1s", "must be positive"},
		{"self-preservation", "yes", "true, false, 1 or 0"},
		{"renewal-percent-threshold", "0", "greater than 0 and at most 1"},
		{"renewal-percent-threshold", "1.01", "greater than 0 and at most 1"},
		{"renewal-percent-threshold", "NaN", "greater than 0 and at most 1"},
		{"renewal-percent-threshold", "most", "not a number"},
		{"renewal-threshold-update-interval", "0s", "must be positive"},
		{"expected-client-renewal-interval", "-30s", "must be positive"},
		{"renewal-window", "0s", "must be positive"},
		{"expected-initial-renewers", "-1", "must not be negative"},
		{"expected-initial-renewers", "1.5", "not an integer"},
		{"delta-retention", "0s", "must be positive"},
		{"delta-retention-interval", "1 minute", "not a duration"},
		{"lease-duration-doubling", "maybe", "true, false, 1 or 0"},
		{"response-cache-update-interval", "-1s", "must not be negative"},
		{"delta-max-bytes", "-1", "byte count"},
		{"delta-max-bytes", "lots", "byte count"},
		{"max-body-bytes", "0", "must be positive"},
		{"max-body-bytes", "1 parsec", "byte count"},
		{"max-body-bytes", "0KiB", "must be positive"},
		{"ready-timeout", "-1s", "must not be negative"},
		{"ready-timeout", "soon", "not a duration"},
		{"tombstone-ttl", "0s", "must be positive"},
		{"tombstone-ttl", "-10m", "must be positive"},
		{"tombstone-ttl", "10", "not a duration"},
		{"http-write-timeout", "0", "must be positive"},
		{"http-write-timeout", "-2m", "must be positive"},
		{"log-level", "verbose", "debug, info, warn or error"},
		{"log-format", "xml", "text or json"},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"="+tt.value, func(t *testing.T) {
			_, _, err := LoadConfig([]string{"--" + tt.flag + "=" + tt.value}, envMap(nil))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--"+tt.flag)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), strings.TrimSpace(tt.value))

			// From the environment the error names the variable, never
			// the flag; from the file, the file, line and key.
			env := "HEUREKA_" + strings.ToUpper(strings.ReplaceAll(tt.flag, "-", "_"))
			_, _, err = LoadConfig(nil, envMap(map[string]string{env: tt.value}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "environment variable "+env+": invalid value"), "%v", err)
			assert.NotContains(t, err.Error(), "--"+tt.flag)

			p := writeYAML(t, "log-format: text\n"+tt.flag+": "+strconv.Quote(tt.value)+"\n")
			_, _, err = LoadConfig([]string{"--config", p}, envMap(nil))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), p+":2: "+tt.flag+": invalid value"), "%v", err)
		})
	}
}

// TestLoadConfigDurationBoundsNameTheSource: a duration out of its bounds is
// rejected with a message naming where the value came from (flag,
// environment variable or file key and line) and the value itself.
func TestLoadConfigDurationBoundsNameTheSource(t *testing.T) {
	tests := []struct {
		name, value, want string // want: the reason
	}{
		{"tombstone-ttl", "0s", "must be positive"},
		{"tombstone-ttl", "-1m", "must be positive"},
		{"http-write-timeout", "0s", "must be positive"},
		{"ready-timeout", "-5s", "must not be negative"},
		{"eviction-interval", "0s", "must be positive"},
		{"response-cache-update-interval", "-1s", "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, _, err := LoadConfig([]string{"--" + tt.name + "=" + tt.value}, envMap(nil))
			require.Error(t, err)
			assert.Equal(t, fmt.Sprintf("--%s: invalid value %q: %s", tt.name, tt.value, tt.want), err.Error())

			env := "HEUREKA_" + strings.ToUpper(strings.ReplaceAll(tt.name, "-", "_"))
			_, _, err = LoadConfig(nil, envMap(map[string]string{env: tt.value}))
			require.Error(t, err)
			assert.Equal(t, fmt.Sprintf("environment variable %s: invalid value %q: %s", env, tt.value, tt.want), err.Error())

			p := writeYAML(t, "log-level: info\nheureka:\n  "+tt.name+": "+tt.value+"\n")
			_, _, err = LoadConfig([]string{"--config", p}, envMap(nil))
			require.Error(t, err)
			assert.Equal(t, fmt.Sprintf("%s:3: heureka.%s: invalid value %q: %s", p, tt.name, tt.value, tt.want), err.Error())
		})
	}

	t.Run("zero ready timeout is accepted everywhere", func(t *testing.T) {
		p := writeYAML(t, "ready-timeout: 0s\n")
		for _, src := range []struct {
			args []string
			env  map[string]string
		}{
			{args: []string{"--ready-timeout=0"}},
			{env: map[string]string{"HEUREKA_READY_TIMEOUT": "0s"}},
			{args: []string{"--config", p}},
		} {
			got, _, err := LoadConfig(src.args, envMap(src.env))
			require.NoError(t, err, "%v %v", src.args, src.env)
			assert.Zero(t, got.ReadyTimeout, "%v %v", src.args, src.env)
		}
	})
}

func TestLoadConfigEnvErrorNamesVariable(t *testing.T) {
	_, _, err := LoadConfig(nil, envMap(map[string]string{"HEUREKA_EVICTION_INTERVAL": "soon"}))
	require.Error(t, err)
	assert.Equal(t, `environment variable HEUREKA_EVICTION_INTERVAL: invalid value "soon": not a duration (use Go syntax such as 90s, 15m or 1h30m)`, err.Error())
}

func TestLoadConfigGossipKey(t *testing.T) {
	tests := []struct {
		name, key string
		want      string // "" for valid
	}{
		{"empty disables encryption", "", ""},
		{"AES-128", key(16), ""},
		{"AES-192", key(24), ""},
		{"AES-256", key(32), ""},
		{"too short", key(15), "decodes to 15 bytes; want 16, 24 or 32"},
		{"too long", key(33), "decodes to 33 bytes"},
		{"not base64", "not*base64!", "not valid standard base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := LoadConfig([]string{"--gossip-key=" + tt.key}, envMap(nil))
			if tt.want == "" {
				require.NoError(t, err)
				k, err := decodeGossipKey(got.GossipKey)
				require.NoError(t, err)
				if tt.key != "" {
					assert.Len(t, k, len(k))
					assert.Contains(t, []int{16, 24, 32}, len(k))
				} else {
					assert.Nil(t, k)
				}
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--gossip-key")
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), tt.key, "the key must not be echoed")
		})
	}
}

func TestLoadConfigArgs(t *testing.T) {
	t.Run("help", func(t *testing.T) {
		for _, a := range []string{"-h", "--help", "-help"} {
			_, _, err := LoadConfig([]string{a}, envMap(nil))
			assert.ErrorIs(t, err, ErrHelp, a)
		}
	})
	t.Run("unknown flag", func(t *testing.T) {
		_, _, err := LoadConfig([]string{"--no-such-flag=1"}, envMap(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no-such-flag")
		assert.False(t, errors.Is(err, ErrHelp))
	})
	t.Run("missing value", func(t *testing.T) {
		_, _, err := LoadConfig([]string{"--node-name"}, envMap(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "node-name")
	})
	t.Run("positional argument", func(t *testing.T) {
		_, _, err := LoadConfig([]string{"--node-name=a", "extra"}, envMap(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unexpected argument "extra"`)
	})
	t.Run("nil getenv uses the environment", func(t *testing.T) {
		t.Setenv("HEUREKA_NODE_NAME", "from-os-env")
		got, _, err := LoadConfig(nil, nil)
		require.NoError(t, err)
		assert.Equal(t, "from-os-env", got.NodeName)
	})
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(c *Config)
		want []string // substrings of the error; none for valid
	}{
		{"defaults", func(c *Config) {}, nil},
		{"ipv6 addresses", func(c *Config) { c.HTTPAddr = "[::1]:8761"; c.AdvertiseAddr = "[fd00::2]:7946" }, nil},
		{"zero ready timeout and cache", func(c *Config) { c.ReadyTimeout = 0; c.ResponseCacheUpdateInterval = 0 }, nil},
		{"negative ready timeout", func(c *Config) { c.ReadyTimeout = -time.Second },
			[]string{`--ready-timeout: invalid value "-1s": must not be negative (0 does not wait for the initial sync)`}},
		{"zero tombstone TTL and write timeout", func(c *Config) { c.TombstoneTTL = 0; c.HTTPWriteTimeout = -time.Minute },
			[]string{`--tombstone-ttl: invalid value "0s": must be positive`, `--http-write-timeout: invalid value "-1m": must be positive`}},
		{"no delta bound", func(c *Config) { c.DeltaMaxBytes = 0 }, nil},
		{"negative delta bound", func(c *Config) { c.DeltaMaxBytes = -1 },
			[]string{"--delta-max-bytes: invalid value -1: must not be negative (0 for no bound)"}},
		{"join forms", func(c *Config) { c.Join = []string{"a", "a.b.c", "a:1", "10.0.0.1", "fd00::1", "[fd00::1]:7946"} }, nil},
		{"empty http addr", func(c *Config) { c.HTTPAddr = "" }, []string{`--http-addr: invalid value ""`}},
		{"advertise without port", func(c *Config) { c.AdvertiseAddr = "10.0.0.1" }, []string{"--advertise-addr", "host:port"}},
		{"empty join element", func(c *Config) { c.Join = []string{""} }, []string{"--join"}},
		{"uppercase log level", func(c *Config) { c.LogLevel = "INFO"; c.LogFormat = "JSON" }, nil},
		{"all bad at once", func(c *Config) {
			c.EvictionInterval = 0
			c.RenewalWindow = -time.Second
			c.MaxBodyBytes = -1
			c.LogFormat = "yaml"
		}, []string{`--eviction-interval: invalid value "0s": must be positive`, "--renewal-window", "--max-body-bytes: invalid value -1", `--log-format: invalid value "yaml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := with(tt.mod).Validate()
			if len(tt.want) == 0 {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestUsage(t *testing.T) {
	var b bytes.Buffer
	Usage(&b)
	out := b.String()
	for _, s := range []string{"serve", "(the default subcommand)", "version", "--help"} {
		assert.Contains(t, out, s)
	}
	for _, o := range options {
		assert.Contains(t, out, "--"+o.name, o.name)
		assert.Contains(t, out, o.env(), o.name)
	}
	for _, s := range []string{`(default ":8761"; env HEUREKA_HTTP_ADDR)`, "(default 1m; env HEUREKA_EVICTION_INTERVAL)",
		"(default 0.85;", "(default 15m;", "(default true;", "(default the host name;", "(default 1048576;", `(default "info";`} {
		assert.Contains(t, out, s)
	}
}

func TestEnvNames(t *testing.T) {
	want := map[string]string{
		"http-addr":                         "HEUREKA_HTTP_ADDR",
		"config":                            "HEUREKA_CONFIG",
		"renewal-threshold-update-interval": "HEUREKA_RENEWAL_THRESHOLD_UPDATE_INTERVAL",
	}
	for name, env := range want {
		o, ok := optionByName(name)
		require.True(t, ok, name)
		assert.Equal(t, env, o.env())
	}
	assert.Len(t, options, 29+13+9, "one option per Config field (13 in Security, 9 in Regions)")
}

// The Eureka peers' passwords never reach the effective-configuration log.
func TestEurekaPeersPasswordNotLogged(t *testing.T) {
	c := DefaultConfig()
	c.EurekaPeers = []string{"http://user:s3cret@old:8761/eureka/", "http://old-2:8761/eureka/"}
	got := configAttr(c).String()
	assert.NotContains(t, got, "s3cret")
	assert.Contains(t, got, "old-2:8761")
	assert.Contains(t, got, "user:")
}
