package actors

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The registry stores instances with what they repeat shared: equal small
// metadata maps are one map, repeated strings one copy, whether they came
// from a client (register) or a peer (applyRecord); values unique to an
// instance stay its own.
func TestRegistrySharesRepeatedValues(t *testing.T) {
	a, _ := newTestApp(t, false)
	mk := func(i int) *Instance {
		in := &Instance{InstanceID: fmt.Sprintf("i-%d", i), HostName: fmt.Sprintf("h%d", i), App: string([]byte("app")),
			Status: Status([]byte("UP")), VIPAddress: string([]byte("orders")),
			DataCenterInfo: DataCenterInfo{Class: string([]byte("com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo")), Name: "MyOwn"},
			Metadata:       map[string]string{"zone": string([]byte("zone-a")), "management.port": "8081"}}
		in.Normalize()
		return in
	}
	a.register(mk(1), false)
	a.registerOwned(mk(2), false)
	peer := mk(3)
	peer.LastDirtyTimestamp = a.now()
	_, res := a.applyRecord(Record{App: "APP", ID: "i-3", Version: Version{Clock: uint64(a.now()) << hlcLogicalBits, Node: "n2"}, Instance: peer}, false)
	require.Equal(t, ApplyInstalled, res)
	first, _ := mustGet(t, a, "i-1")
	assert.Equal(t, map[string]string{"zone": "zone-a", "management.port": "8081"}, first.Metadata)
	for _, id := range []string{"i-2", "i-3"} {
		b, _ := mustGet(t, a, id)
		assert.Equal(t, unsafe.Pointer(unsafe.StringData(first.App)), unsafe.Pointer(unsafe.StringData(b.App)), "one copy of the app name")
		assert.Equal(t, unsafe.Pointer(unsafe.StringData(first.VIPAddress)), unsafe.Pointer(unsafe.StringData(b.VIPAddress)))
		assert.Equal(t, unsafe.Pointer(unsafe.StringData(first.DataCenterInfo.Class)), unsafe.Pointer(unsafe.StringData(b.DataCenterInfo.Class)))
		assert.Equal(t, unsafe.Pointer(unsafe.StringData(string(first.Status))), unsafe.Pointer(unsafe.StringData(string(StatusUp))))
		assert.Equal(t, fmt.Sprintf("%p", first.Metadata), fmt.Sprintf("%p", b.Metadata), "equal metadata is one map")
		assert.NotEqual(t, unsafe.Pointer(unsafe.StringData(first.HostName)), unsafe.Pointer(unsafe.StringData(b.HostName)))
	}
	// The copies are the process-wide canonical ones, as Intern makes them.
	other := mk(4)
	other.Intern()
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(first.VIPAddress)), unsafe.Pointer(unsafe.StringData(other.VIPAddress)))
	assert.Equal(t, fmt.Sprintf("%p", first.Metadata), fmt.Sprintf("%p", other.Metadata))

	// A value that changes is shared from then on in its new form.
	changed := mk(5)
	changed.VIPAddress = string([]byte("orders-v2"))
	changed.Metadata = map[string]string{"zone": "zone-b"}
	a.register(changed, false)
	sixth := mk(6)
	sixth.VIPAddress = string([]byte("orders-v2"))
	sixth.Metadata = map[string]string{"zone": "zone-b"}
	a.register(sixth, false)
	c5, _ := mustGet(t, a, "i-5")
	c6, _ := mustGet(t, a, "i-6")
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(c5.VIPAddress)), unsafe.Pointer(unsafe.StringData(c6.VIPAddress)))
	assert.Equal(t, fmt.Sprintf("%p", c5.Metadata), fmt.Sprintf("%p", c6.Metadata))
	assert.NotEqual(t, fmt.Sprintf("%p", first.Metadata), fmt.Sprintf("%p", c5.Metadata))

	// A state made from a clone (a status change) shares its map again.
	_, ok, _ := a.setStatus("i-2", StatusOutOfService, nil, false)
	require.True(t, ok)
	changedStatus, _ := mustGet(t, a, "i-2")
	assert.Equal(t, StatusOutOfService, changedStatus.Status)
	assert.Equal(t, fmt.Sprintf("%p", first.Metadata), fmt.Sprintf("%p", changedStatus.Metadata), "a status change keeps the shared map")

	// An instance that repeats its host name holds it once, and holds its
	// home page and host name inside its other URLs.
	ip := mk(7)
	ip.HostName, ip.IPAddr = string([]byte("10.0.0.7")), string([]byte("10.0.0.7"))
	ip.HomePageURL = string([]byte("http://10.0.0.7:8080/"))
	ip.StatusPageURL = string([]byte("http://10.0.0.7:8080/actuator/info"))
	ip.HealthCheckURL = string([]byte("http://10.0.0.7:8080/actuator/health"))
	a.register(ip, false)
	c7, _ := mustGet(t, a, "i-7")
	status := unsafe.StringData(c7.StatusPageURL)
	assert.Equal(t, unsafe.Pointer(status), unsafe.Pointer(unsafe.StringData(c7.HomePageURL)), "the home page inside the status page URL")
	assert.Equal(t, unsafe.Pointer(unsafe.Add(unsafe.Pointer(status), len("http://"))), unsafe.Pointer(unsafe.StringData(c7.HostName)), "the host name inside it")
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(c7.HostName)), unsafe.Pointer(unsafe.StringData(c7.IPAddr)), "the IP address as host name, once")
	assert.Equal(t, "http://10.0.0.7:8080/", c7.HomePageURL)
	assert.Equal(t, "10.0.0.7", c7.HostName)

	// A Clone owns its map.
	d := first.Clone()
	d.Metadata["zone"] = "zone-c"
	assert.Equal(t, "zone-a", first.Metadata["zone"], "changing a clone leaves the shared map alone")
}

// Intern shares equal small metadata maps without boundary confusion, and
// leaves large maps alone.
func TestInternSharesSmallMetadata(t *testing.T) {
	// No boundary confusion: {"a:b": ""} and {"a": "b"} are different maps.
	x := &Instance{Metadata: map[string]string{"1:a1:b": ""}}
	y := &Instance{Metadata: map[string]string{"a": "b"}}
	x.Intern()
	y.Intern()
	assert.Equal(t, map[string]string{"1:a1:b": ""}, x.Metadata)
	assert.Equal(t, map[string]string{"a": "b"}, y.Metadata)

	// Large maps are left alone.
	big := map[string]string{}
	for i := 0; i < 100; i++ {
		big[fmt.Sprint("key", i)] = "value"
	}
	e := &Instance{Metadata: big}
	e.Intern()
	assert.Equal(t, fmt.Sprintf("%p", big), fmt.Sprintf("%p", e.Metadata))
}
