// Package javaharness is what the Go tests that drive Java (clients/java,
// clients/springstarter, clients/migration) share: Heureka nodes on
// loopback with short timers, Maven run offline with its output in the test
// log, and the reference Eureka server that make javadeps builds
// (clients/java/reference).
//
// Only tests import it. Its helpers fail the test (t.Fatal) unless they say
// they return an error, which those that may run on a goroutine of their own
// do.
package javaharness
