package eureka

// What the encoders and the decoders agree on about an instance: the ports
// Eureka assumes when a client sends none, and which data centers are
// Amazon's and what class marker each is written with.

import "github.com/heureka/heureka/actors"

// defaultPort is what Eureka's InstanceInfo holds when a client sends no
// port (7001, enabled) or no securePort (7002, disabled).
func defaultPort(plain bool) actors.Port {
	if plain {
		return actors.Port{Number: 7001, Enabled: true}
	}
	return actors.Port{Number: 7002}
}

// Data center classes Eureka writes. Non-Amazon data centers are always
// written as DefaultDataCenterInfo (Eureka's own choice): MyDataCenterInfo,
// which fargo sends, is accepted on input but not echoed, and an arbitrary
// class a client made up is not echoed either, because Java clients fail to
// deserialize the whole document on a class they do not know.
const (
	classDefaultDataCenter = "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"
	classAmazonInfo        = "com.netflix.appinfo.AmazonInfo"
	classEmptyMap          = "java.util.Collections$EmptyMap"
	dataCenterAmazon       = "Amazon"
)

// isAmazon reports whether d is an AWS data center, by name or by class.
func isAmazon(d *actors.DataCenterInfo) bool {
	return d.Name == dataCenterAmazon || d.Class == classAmazonInfo
}

// dataCenterClass is the class marker written for d.
func dataCenterClass(d *actors.DataCenterInfo) string {
	if isAmazon(d) {
		return classAmazonInfo
	}
	return classDefaultDataCenter
}
