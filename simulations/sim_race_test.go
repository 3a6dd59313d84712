//go:build race

package simulations

// raceEnabled reports that the tests run under the race detector, which
// slows the nodes down several times; testConfig then widens the time
// bounds.
const raceEnabled = true
