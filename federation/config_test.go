package federation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/eureka"
)

func TestConfigValidate(t *testing.T) {
	ok := func() Config {
		c := DefaultConfig()
		c.Remotes = []Remote{{Name: "dc2", URL: "http://eureka.dc2:8761/eureka/"}}
		return c
	}
	require.NoError(t, ok().Validate())
	require.NoError(t, DefaultLocalConfig().Validate())
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"upper-case region", func(c *Config) { c.Region = "DC1" }, `region "DC1"`},
		{"empty region", func(c *Config) { c.Region = "" }, `region ""`},
		{"remote named like home", func(c *Config) { c.Remotes[0].Name = c.Region }, "own region"},
		{"remote twice", func(c *Config) { c.Remotes = append(c.Remotes, c.Remotes[0]) }, "twice"},
		{"remote with comma", func(c *Config) { c.Remotes[0].Name = "a,b" }, `"a,b"`},
		{"relative URL", func(c *Config) { c.Remotes[0].URL = "eureka.dc2/eureka" }, "absolute http"},
		{"zero interval", func(c *Config) { c.PullInterval = 0 }, "PullInterval 0s must be positive"},
		{"timeout past stale", func(c *Config) { c.RequestTimeout = 2 * time.Minute }, "RequestTimeout"},
		{"interval past stale", func(c *Config) { c.PullInterval = time.Minute }, "shorter than StaleAfter"},
		{"drop before stale", func(c *Config) { c.DropAfter = c.StaleAfter }, "DropAfter"},
		{"negative retention", func(c *Config) { c.DeltaRetention = -1 }, "DeltaRetention"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.edit(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseRemote(t *testing.T) {
	r, err := ParseRemote(" DC2 = http://e2:8761/eureka/ ")
	require.NoError(t, err)
	assert.Equal(t, Remote{Name: "dc2", URL: "http://e2:8761/eureka/"}, r)
	for _, bad := range []string{"dc2", "=http://x/", "dc2="} {
		_, err := ParseRemote(bad)
		assert.ErrorIs(t, err, ErrConfig, bad)
	}
}

// A remote's password (basic auth in its URL) shows nowhere: not in the
// status, not in a pull's error.
func TestRemotePasswordNotShown(t *testing.T) {
	c := DefaultLocalConfig()
	c.Region = "dc1"
	c.Remotes = []Remote{{Name: "dc2", URL: "http://ops:s3cret@127.0.0.1:1/eureka/"}}
	f, err := New(c, eureka.Encoders())
	require.NoError(t, err)
	f.Start()
	defer f.Stop()
	require.Eventually(t, func() bool { return f.Status()[0].LastError != "" }, 2*time.Second, 5*time.Millisecond)
	st := f.Status()[0]
	assert.NotContains(t, st.URL, "s3cret")
	assert.Contains(t, st.URL, "ops:xxxxx@")
	assert.NotContains(t, st.LastError, "s3cret")
}
