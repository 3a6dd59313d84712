package view_test

import (
	"fmt"
	"strconv"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
)

// registerBody is the register request body a Java (Spring Cloud) client
// sends (spec §3.7) for instance i of application app: the shape the
// benchmarks and the memory measurement load, decoded as a registration is.
func registerBody(app string, i int) []byte {
	ip := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	url := "http://" + ip + ":8080/"
	lower := []byte(app)
	for j, c := range lower {
		if c >= 'A' && c <= 'Z' {
			lower[j] = c + 'a' - 'A'
		}
	}
	return []byte(`{"instance":{"instanceId":"` + ip + `:` + string(lower) + `:8080","hostName":"` + ip +
		`","app":"` + app + `","ipAddr":"` + ip + `","status":"UP","overriddenStatus":"UNKNOWN",` +
		`"port":{"$":8080,"@enabled":"true"},"securePort":{"$":443,"@enabled":"false"},"countryId":1,` +
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},` +
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":0,"lastRenewalTimestamp":0,` +
		`"evictionTimestamp":0,"serviceUpTimestamp":0},"metadata":{"management.port":"8081","zone":"zone-a"},` +
		`"homePageUrl":"` + url + `","statusPageUrl":"` + url + `actuator/info","healthCheckUrl":"` + url +
		`actuator/health","vipAddress":"` + string(lower) + `","secureVipAddress":"` + string(lower) +
		`","isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"1754500000000",` +
		`"lastDirtyTimestamp":"1754500000000"}}`)
}

// decodedInstance decodes and normalizes instance i of app as the HTTP layer
// does before it registers it, with its repeated values shared as the
// registry stores them.
func decodedInstance(app string, i int) *actors.Instance {
	in, err := eureka.DecodeInstance("application/json", registerBody(app, i))
	if err != nil {
		panic(err)
	}
	in.Normalize()
	in.Intern()
	return in
}

// appName names application a of a load.
func appName(a int) string { return "APP-" + strconv.Itoa(a) }
