// Package httpapi is heureka's Eureka-compatible REST adapter: it decodes
// Eureka JSON and XML requests, calls the registry, and serves the encoded
// documents the view prepares with this package's encoders (see Encoders).
package httpapi
