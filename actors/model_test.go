package actors

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// Normalize shares what instances repeat: equal small metadata maps are one
// map, repeated strings one copy; values unique to an instance stay its own.
func TestNormalizeSharesRepeatedValues(t *testing.T) {
	mk := func(i int) *Instance {
		in := &Instance{InstanceID: fmt.Sprintf("i-%d", i), HostName: fmt.Sprintf("h%d", i), App: string([]byte("orders")),
			Status: Status([]byte("UP")), VIPAddress: string([]byte("orders")),
			DataCenterInfo: DataCenterInfo{Class: string([]byte("com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo")), Name: "MyOwn"},
			Metadata:       map[string]string{"zone": string([]byte("zone-a")), "management.port": "8081"}}
		in.Normalize()
		return in
	}
	a, b := mk(1), mk(2)
	assert.Equal(t, map[string]string{"zone": "zone-a", "management.port": "8081"}, a.Metadata)
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(a.App)), unsafe.Pointer(unsafe.StringData(b.App)), "one copy of the app name")
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(a.VIPAddress)), unsafe.Pointer(unsafe.StringData(b.VIPAddress)))
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(a.DataCenterInfo.Class)), unsafe.Pointer(unsafe.StringData(b.DataCenterInfo.Class)))
	assert.Equal(t, unsafe.Pointer(unsafe.StringData(string(a.Status))), unsafe.Pointer(unsafe.StringData(string(StatusUp))))
	assert.Equal(t, fmt.Sprintf("%p", a.Metadata), fmt.Sprintf("%p", b.Metadata), "equal metadata is one map")

	// Different metadata is not shared, and a Clone owns its map.
	c := &Instance{InstanceID: "c", App: "ORDERS", Metadata: map[string]string{"zone": "zone-b", "management.port": "8081"}}
	c.Normalize()
	assert.NotEqual(t, fmt.Sprintf("%p", a.Metadata), fmt.Sprintf("%p", c.Metadata))
	d := a.Clone()
	d.Metadata["zone"] = "zone-c"
	assert.Equal(t, "zone-a", b.Metadata["zone"], "changing a clone leaves the shared map alone")

	// No boundary confusion: {"a:b": ""} and {"a": "b"} are different maps.
	x := &Instance{Metadata: map[string]string{"1:a1:b": ""}}
	y := &Instance{Metadata: map[string]string{"a": "b"}}
	x.Normalize()
	y.Normalize()
	assert.Equal(t, map[string]string{"1:a1:b": ""}, x.Metadata)
	assert.Equal(t, map[string]string{"a": "b"}, y.Metadata)

	// Large maps are left alone.
	big := map[string]string{}
	for i := 0; i < 100; i++ {
		big[fmt.Sprint("key", i)] = "value"
	}
	e := &Instance{Metadata: big}
	e.Normalize()
	assert.Equal(t, fmt.Sprintf("%p", big), fmt.Sprintf("%p", e.Metadata))
}
