package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/federation"
)

func TestRegionFlags(t *testing.T) {
	c, _, err := LoadConfig([]string{"--region", "DC1", "--remote-region", "dc2=http://e2:8761/eureka/",
		"--remote-region", "dc3=http://e3:8761/eureka/", "--region-pull-interval", "2s", "--region-transparent-fallback"}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, "dc1", c.Region)
	assert.Equal(t, []string{"dc2=http://e2:8761/eureka/", "dc3=http://e3:8761/eureka/"}, c.RemoteRegions)
	nc, err := nodeConfig(c, nil)
	require.NoError(t, err)
	require.NotNil(t, nc.Federation)
	assert.Equal(t, []federation.Remote{{Name: "dc2", URL: "http://e2:8761/eureka/"}, {Name: "dc3", URL: "http://e3:8761/eureka/"}},
		nc.Federation.Remotes)
	assert.Equal(t, 2*time.Second, nc.Federation.PullInterval)
	assert.True(t, nc.Federation.TransparentFallback)
	assert.True(t, nc.Federation.Stream, "streams are followed by default")
	assert.Equal(t, c.DeltaRetention, nc.Federation.DeltaRetention)

	nc, err = nodeConfig(DefaultConfig(), nil)
	require.NoError(t, err)
	assert.Nil(t, nc.Federation, "no remote region: no federation")
}

func TestRegionFlagsRejectBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--remote-region", "dc2"},
		{"--remote-region", "dc2=ftp://x/"},
		{"--region", "dc1", "--remote-region", "dc1=http://x/eureka/"},
		{"--remote-region", "dc2=http://x/eureka/", "--region-drop-after", "30s"},
		{"--region-stale-after", "0s"},
	} {
		_, _, err := LoadConfig(args, envMap(nil))
		assert.Error(t, err, "%v", args)
	}
}

func TestRegionSpringKeys(t *testing.T) {
	p := writeYAML(t, `
eureka:
  client:
    region: dc1
  server:
    remote-region-urls-with-name:
      dc3: http://e3:8761/eureka/
      dc2: http://e2:8761/eureka/
    remote-region-registry-fetch-interval: 10
    disable-transparent-fallback-to-other-region: false
`)
	c, _, err := LoadConfig([]string{"--config", p}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, "dc1", c.Region)
	assert.Equal(t, []string{"dc2=http://e2:8761/eureka/", "dc3=http://e3:8761/eureka/"}, c.RemoteRegions)
	assert.Equal(t, 10*time.Second, c.RegionPullInterval)
	assert.True(t, c.RegionTransparentFallback)

	p = writeYAML(t, "eureka:\n  remoteRegionUrlsWithName: \"dc2;http://e2:8761/eureka/\"\n")
	c, _, err = LoadConfig([]string{"--config", p}, envMap(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"dc2=http://e2:8761/eureka/"}, c.RemoteRegions)
}
