//go:build !race

package eureka

// raceEnabled: see decode_race_test.go.
const raceEnabled = false
