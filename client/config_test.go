package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/client"
)

// validConfig is a complete, valid configuration.
func validConfig() client.Config {
	cfg := client.DefaultConfig()
	cfg.ServerURLs = []string{"http://heureka-1:8761/eureka/", "https://user:pw@heureka-2:8761/eureka"}
	cfg.Instance.App = "orders"
	cfg.Instance.InstanceID = "host-1:orders:8080"
	cfg.Instance.HostName = "host-1"
	cfg.Instance.IPAddr = "10.0.0.1"
	cfg.Instance.Port = 8080
	return cfg
}

func TestDefaultConfig(t *testing.T) {
	cfg := client.DefaultConfig()
	assert.Equal(t, 30*time.Second, cfg.RenewalInterval)
	assert.Equal(t, 90*time.Second, cfg.LeaseDuration)
	assert.Equal(t, client.StatusUp, cfg.Instance.Status)
	v := validConfig()
	require.NoError(t, v.Validate())
	_, err := client.New(v)
	require.NoError(t, err)
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*client.Config)
		want   string
	}{
		{"no servers", func(c *client.Config) { c.ServerURLs = nil }, "ServerURLs is empty"},
		{"relative URL", func(c *client.Config) { c.ServerURLs = []string{"heureka:8761/eureka"} }, "must start with http"},
		{"ftp URL", func(c *client.Config) { c.ServerURLs = []string{"ftp://heureka/eureka"} }, "must start with http"},
		{"no host", func(c *client.Config) { c.ServerURLs = []string{"http:///eureka"} }, "has no host"},
		{"query", func(c *client.Config) { c.ServerURLs = []string{"http://h/eureka?x=1"} }, "query or a fragment"},
		{"bad URL", func(c *client.Config) { c.ServerURLs = []string{"http://h:port/"} }, "server URL"},
		{"no app", func(c *client.Config) { c.Instance.App = " " }, "Instance.App"},
		{"slash in app", func(c *client.Config) { c.Instance.App = "a/b" }, "Instance.App"},
		{"no id", func(c *client.Config) { c.Instance.InstanceID = "" }, "Instance.InstanceID"},
		{"slash in id", func(c *client.Config) { c.Instance.InstanceID = "a/b" }, "Instance.InstanceID"},
		{"no host name", func(c *client.Config) { c.Instance.HostName = "" }, "Instance.HostName"},
		{"no IP", func(c *client.Config) { c.Instance.IPAddr = "" }, "Instance.IPAddr"},
		{"port 0", func(c *client.Config) { c.Instance.Port = 0 }, "Instance.Port"},
		{"port too big", func(c *client.Config) { c.Instance.Port = 65536 }, "Instance.Port"},
		{"negative secure port", func(c *client.Config) { c.Instance.SecurePort = -1 }, "Instance.SecurePort"},
		{"empty status", func(c *client.Config) { c.Instance.Status = "" }, "Instance.Status"},
		{"lower-case status", func(c *client.Config) { c.Instance.Status = "up" }, "Instance.Status"},
		{"empty metadata key", func(c *client.Config) { c.Instance.Metadata = map[string]string{"": "x"} }, "empty key"},
		{"zero lease", func(c *client.Config) { c.LeaseDuration = 0 }, "LeaseDuration"},
		{"fractional lease", func(c *client.Config) { c.LeaseDuration = 1500 * time.Millisecond }, "whole number of seconds"},
		{"lease over a day", func(c *client.Config) { c.LeaseDuration = 25 * time.Hour }, "LeaseDuration"},
		{"zero renewal", func(c *client.Config) { c.RenewalInterval = 0 }, "RenewalInterval"},
		{"renewal not below lease", func(c *client.Config) { c.RenewalInterval = c.LeaseDuration }, "below LeaseDuration"},
		{"zero request timeout", func(c *client.Config) { c.RequestTimeout = 0 }, "RequestTimeout"},
		{"zero shutdown timeout", func(c *client.Config) { c.ShutdownTimeout = 0 }, "ShutdownTimeout"},
		{"short wait", func(c *client.Config) { c.WatchWait = 500 * time.Millisecond }, "WatchWait"},
		{"long wait", func(c *client.Config) { c.WatchWait = 11 * time.Minute }, "WatchWait"},
		{"zero poll", func(c *client.Config) { c.PollInterval = 0 }, "PollInterval"},
		{"zero retry", func(c *client.Config) { c.RetryInitial = 0 }, "RetryInitial"},
		{"retry max below initial", func(c *client.Config) { c.RetryMax = c.RetryInitial / 2 }, "RetryMax"},
		{"password without user", func(c *client.Config) { c.Password = "pw" }, "without a Username"},
		{"HTTP timeout cuts waits", func(c *client.Config) { c.HTTPClient = &http.Client{Timeout: 30 * time.Second} }, "HTTPClient.Timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := validConfig()
			tc.mutate(&cfg)
			err := cfg.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = client.New(cfg)
			assert.Error(t, err, "New validates too")
		})
	}
}

func TestSetStatusRejectsUnknownStatus(t *testing.T) {
	c, err := client.New(validConfig())
	require.NoError(t, err)
	assert.ErrorContains(t, c.SetStatus(t.Context(), "up"), "must be UP")
}
