package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/memnet"
)

func TestDefaultConfigsAreValid(t *testing.T) {
	for name, c := range map[string]Config{"default": DefaultConfig(), "local": DefaultLocalConfig()} {
		c.NodeName = "n1"
		assert.NoError(t, c.Validate(), name)
	}
	assert.Equal(t, DefaultPort, DefaultConfig().BindPort)
	assert.Equal(t, "0.0.0.0", DefaultConfig().BindAddr)
	assert.Equal(t, 10*time.Second, DefaultConfig().StreamTimeout)
	assert.Equal(t, 10*time.Second, DefaultLocalConfig().StreamTimeout)
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
		want   string // "" = valid
	}{
		{"ok", func(*Config) {}, ""},
		{"no name", func(c *Config) { c.NodeName = "" }, "NodeName is empty"},
		{"bad bind", func(c *Config) { c.BindAddr = "localhost" }, `BindAddr "localhost" is not an IP`},
		{"empty bind", func(c *Config) { c.BindAddr = "" }, "BindAddr is empty"},
		{"empty bind ok with transport", func(c *Config) {
			c.BindAddr = ""
			c.Transport = memnet.New(1).NewTransport("x")
		}, ""},
		{"port range", func(c *Config) { c.BindPort = 70000 }, "BindPort 70000 out of range"},
		{"advertise", func(c *Config) { c.AdvertiseAddr = "host" }, `AdvertiseAddr "host" is not an IP`},
		{"advertise port", func(c *Config) { c.AdvertisePort = -1 }, "AdvertisePort -1"},
		{"key 16", func(c *Config) { c.GossipKey = make([]byte, 16) }, ""},
		{"key 24", func(c *Config) { c.GossipKey = make([]byte, 24) }, ""},
		{"key 32", func(c *Config) { c.GossipKey = make([]byte, 32) }, ""},
		{"key 10", func(c *Config) { c.GossipKey = make([]byte, 10) }, "GossipKey is 10 bytes, want 16, 24 or 32"},
		{"retry min", func(c *Config) { c.JoinRetryMin = 0 }, "JoinRetryMin 0s must be positive"},
		{"retry max", func(c *Config) { c.JoinRetryMax = time.Millisecond }, "JoinRetryMax 1ms is less than JoinRetryMin"},
		{"reconnect", func(c *Config) { c.ReconnectInterval = 0 }, "ReconnectInterval"},
		{"reconnect timeout", func(c *Config) { c.ReconnectTimeout = 0 }, "ReconnectTimeout"},
		{"tombstone", func(c *Config) { c.TombstoneTimeout = 0 }, "TombstoneTimeout"},
		{"leave", func(c *Config) { c.LeaveTimeout = 0 }, "LeaveTimeout"},
		{"stream timeout zero", func(c *Config) { c.StreamTimeout = 0 }, "StreamTimeout 0s must be positive"},
		{"stream timeout negative", func(c *Config) { c.StreamTimeout = -time.Second }, "StreamTimeout -1s must be positive"},
		{"join ok", func(c *Config) { c.Join = []string{"a.example:7000", "10.0.0.1", "[::1]:7946", "::1", "seeds"} }, ""},
		{"join empty entry", func(c *Config) { c.Join = []string{""} }, `Join entry ""`},
		{"join no host", func(c *Config) { c.Join = []string{":7946"} }, "no host"},
		{"join bad port", func(c *Config) { c.Join = []string{"a:99999"} }, `bad port "99999"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultLocalConfig()
			c.NodeName = "n1"
			tc.change(&c)
			err := c.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestSplitJoinAddr(t *testing.T) {
	cases := []struct {
		in   string
		host string
		port int
		err  bool
	}{
		{"10.0.0.1:7000", "10.0.0.1", 7000, false},
		{"10.0.0.1", "10.0.0.1", DefaultPort, false},
		{"seeds.example.com", "seeds.example.com", DefaultPort, false},
		{"seeds.example.com:1", "seeds.example.com", 1, false},
		{"[::1]:7000", "::1", 7000, false},
		{"[::1]", "::1", DefaultPort, false},
		{"::1", "::1", DefaultPort, false},
		{":7946", "", 7946, false},
		{"", "", 0, true},
		{"a:b", "", 0, true},
		{"a:0", "", 0, true},
		{"a:1:2", "", 0, true},
	}
	for _, tc := range cases {
		host, port, err := splitJoinAddr(tc.in)
		if tc.err {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.host, host, tc.in)
		assert.Equal(t, tc.port, port, tc.in)
	}
}

func TestParseGossipAddr(t *testing.T) {
	host, port, err := ParseGossipAddr(":7946")
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0", host)
	assert.Equal(t, 7946, port)

	host, port, err = ParseGossipAddr("10.1.2.3")
	require.NoError(t, err)
	assert.Equal(t, "10.1.2.3", host)
	assert.Equal(t, DefaultPort, port)

	_, _, err = ParseGossipAddr("example.com:7946")
	assert.ErrorContains(t, err, "not an IP address")
	_, _, err = ParseGossipAddr("1.2.3.4:x")
	assert.Error(t, err)
}

func TestMemberlistConfig(t *testing.T) {
	c := DefaultConfig()
	c.NodeName = "n1"
	c.BindPort = 8000
	c.GossipKey = []byte("0123456789abcdef")
	c.MemberlistConfig = func(mc *memberlist.Config) { mc.ProbeInterval = 42 * time.Millisecond }
	mc := c.memberlistConfig()
	assert.Equal(t, "n1", mc.Name)
	assert.Equal(t, 8000, mc.BindPort)
	assert.Equal(t, 8000, mc.AdvertisePort)
	assert.Equal(t, c.GossipKey, mc.SecretKey)
	assert.Equal(t, 42*time.Millisecond, mc.ProbeInterval)
	assert.Equal(t, memberlist.DefaultLANConfig().SuspicionMult, mc.SuspicionMult)

	l := DefaultLocalConfig()
	l.NodeName = "n1"
	assert.Equal(t, memberlist.DefaultLocalConfig().SuspicionMult, l.memberlistConfig().SuspicionMult)
}

// A node that comes back under its name at another address may take the
// name over after DeadNodeReclaimTime (30 s by default, for every user of
// the library, not only the command); a negative value is refused.
func TestConfigDeadNodeReclaimTime(t *testing.T) {
	c := DefaultLocalConfig()
	c.NodeName = "n"
	require.NoError(t, c.Validate())
	assert.Equal(t, 30*time.Second, c.memberlistConfig().DeadNodeReclaimTime)
	c.DeadNodeReclaimTime = 0
	assert.Zero(t, c.memberlistConfig().DeadNodeReclaimTime, "0: never")
	c.DeadNodeReclaimTime = -time.Second
	assert.ErrorIs(t, c.Validate(), ErrInvalidConfig)
}
