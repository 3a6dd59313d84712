package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultsAreValid(t *testing.T) {
	c, _, serving, err := parseFlags(nil)
	require.NoError(t, err)
	assert.False(t, serving)
	assert.Equal(t, defaultConfig(), c)
}

func TestBadValuesAreRefused(t *testing.T) {
	for _, args := range [][]string{
		{"-phases", "blocking,sideways"},
		{"-phases", ""},
		{"-instances", "10"},
		{"-app", "SERVICE-00500"}, // 10,000 instances hold SERVICE-00000…00499
		{"-app", "ORDERS"},
		{"-watchers", "1000,1000"},
		{"-watchers", "5000,1000"},
		{"-watchers", "0"},
		{"-watchers", "20000"},
		{"-watchers", "1k"},
		{"-changes", "0"},
		{"-coalesce", "2s"},
		{"-coalesce", "-1ms"},
		{"-churn-every", "0s"},
		{"-churn-fraction", "0"},
		{"-churn-fraction", "1.5"},
		{"-poll-sizes", "10"},
		{"-poll-clients", "0"},
		{"-poll-for", "500ms"},
		{"-poll-churn", "-1"},
		{"-next-after-change"}, // without -raw-blocking
		{"extra"},
	} {
		_, _, _, err := parseFlags(args)
		assert.Error(t, err, "%v", args)
	}
	c, _, _, err := parseFlags([]string{"-churn-for", "0", "-churn-every", "0s", "-watchers", "10,20", "-coalesce", "0"})
	require.NoError(t, err, "no churn: its period does not matter")
	assert.Equal(t, []int{10, 20}, c.Watchers)
	assert.Equal(t, time.Duration(0), c.Coalesce)
}

func TestHashCodeCountsTheCopyAndItsDeltas(t *testing.T) {
	full := &fullCopy{
		status: map[string]string{"a": "UP", "b": "UP", "c": "DOWN"},
		counts: map[string]int{"UP": 2, "DOWN": 1},
	}
	p := &poller{full: full, overlay: map[string]string{}}
	assert.Equal(t, "DOWN_1_UP_2_", p.hashCode())
	p.overlay["c"] = "UP" // modified
	p.overlay["d"] = "UP" // added
	p.overlay["a"] = ""   // deleted
	p.overlay["x"] = ""   // deleted, never held
	p.overlay["b"] = "UP" // added again: no change
	assert.Equal(t, "UP_3_", p.hashCode())
	p.overlay["e"] = "STARTING"
	assert.Equal(t, "STARTING_1_UP_3_", p.hashCode(), "statuses in the order of actors.AllStatuses")
}
