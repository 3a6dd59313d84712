//go:build race

package httpapi

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not stable under it.
const raceEnabled = true
