//go:build !race

package httpapi

// raceEnabled: see race_internal_test.go.
const raceEnabled = false
