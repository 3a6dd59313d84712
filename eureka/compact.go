package eureka

// Compact instances ("X-Eureka-Accept: compact", Eureka's JacksonJsonMini and
// JacksonXmlMini, spec §3.4). The envelopes are the full formats'; an
// instance keeps only what a client needs to route to it: instanceId,
// hostName, app, ipAddr, status, port, securePort, dataCenterInfo (Amazon
// metadata limited to compactAmazonKeys), vipAddress, secureVipAddress,
// lastUpdatedTimestamp (a JSON number here, unlike the full format),
// actionType and asgName. Eureka's exact key order for this codec is
// unverified; this order follows the full format.

import (
	"strconv"

	"github.com/heureka/heureka/actors"
)

// appendCompactInstanceJSON appends one compact instance object.
func appendCompactInstanceJSON(dst []byte, inst *actors.Instance) []byte {
	dst = appendJSONIdentity(dst, inst)
	dst = append(dst, `,"status":`...)
	dst = AppendJSONString(dst, string(inst.Status))
	dst = appendJSONPort(dst, `,"port":`, inst.Port)
	dst = appendJSONPort(dst, `,"securePort":`, inst.SecurePort)
	dst = appendJSONDataCenter(dst, &inst.DataCenterInfo, true)
	dst = appendJSONOptional(dst, `,"vipAddress":`, inst.VIPAddress)
	dst = appendJSONOptional(dst, `,"secureVipAddress":`, inst.SecureVIPAddress)
	dst = append(dst, `,"lastUpdatedTimestamp":`...)
	dst = strconv.AppendInt(dst, inst.LastUpdatedTimestamp, 10)
	dst = appendJSONOptional(dst, `,"actionType":`, string(inst.ActionType))
	dst = appendJSONOptional(dst, `,"asgName":`, inst.ASGName)
	return append(dst, '}')
}

// appendCompactInstanceXML appends one compact <instance> element at depth;
// the caller has written the indentation before the start tag.
func appendCompactInstanceXML(dst []byte, inst *actors.Instance, depth int) []byte {
	d := depth + 1
	dst = append(dst, "<instance>"...)
	if inst.InstanceID != "" {
		dst = appendXMLElem(dst, d, "instanceId", inst.InstanceID)
	}
	dst = appendXMLElem(dst, d, "hostName", inst.HostName)
	dst = appendXMLElem(dst, d, "app", inst.App)
	dst = appendXMLElem(dst, d, "ipAddr", inst.IPAddr)
	dst = appendXMLElem(dst, d, "status", string(inst.Status))
	dst = appendXMLPort(dst, d, "port", inst.Port)
	dst = appendXMLPort(dst, d, "securePort", inst.SecurePort)
	dst = appendXMLDataCenter(dst, d, &inst.DataCenterInfo, true)
	dst = appendXMLOptional(dst, d, "vipAddress", inst.VIPAddress)
	dst = appendXMLOptional(dst, d, "secureVipAddress", inst.SecureVIPAddress)
	dst = appendXMLInt(dst, d, "lastUpdatedTimestamp", inst.LastUpdatedTimestamp)
	dst = appendXMLOptional(dst, d, "actionType", string(inst.ActionType))
	dst = appendXMLOptional(dst, d, "asgName", inst.ASGName)
	dst = appendXMLIndent(dst, depth)
	return append(dst, "</instance>"...)
}

// compactAmazonKeys are the Amazon metadata keys the compact formats keep,
// in the sorted order they are written.
var compactAmazonKeys = [...]string{
	"availability-zone",
	"instance-id",
	"local-ipv4",
	"public-hostname",
	"public-ipv4",
}
