//go:build !race

package eureka

// raceEnabled: see race_test.go.
const raceEnabled = false
