// Package migration holds the tests of a move from a Netflix/Spring Cloud
// Eureka cluster to Heureka with no instance lost, against the real
// reference server (clients/java/reference, built by make javadeps) and
// real Heureka nodes on loopback:
//
//   - Eureka → Heureka: the Eureka server lists a Heureka node in its
//     defaultZone; its peer batches (registrations, heartbeats, status
//     changes, cancels) reach every Heureka member, and what it asks of a
//     peer at startup (a registry fetch) works.
//   - Heureka → Eureka: Heureka nodes started with --eureka-peers
//     (eurekapeer) keep the Eureka server's copies alive past their
//     lease; a broken link lets them expire there, which shows that the
//     check can fail.
//   - The procedure of the README's "Migrating from Eureka", step by step,
//     with zero instances lost at every step.
//
// The package has only tests; it fails (it does not skip) when java or the
// jar is missing.
package migration
