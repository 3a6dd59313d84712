//go:build !race

package simulations

// raceEnabled reports that the tests run under the race detector.
const raceEnabled = false
