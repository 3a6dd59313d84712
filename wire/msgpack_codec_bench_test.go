package wire

import (
	"fmt"
	"testing"
)

// realisticRecords returns a Records batch of n instances shaped like a real
// Spring/Eureka fleet: every field set, half of them on Amazon with data-center
// metadata, each with a handful of metadata keys, as an anti-entropy transfer
// of a large application carries them.
func realisticRecords(n int) *Records {
	const ts = int64(1_700_000_000_000)
	r := &Records{Records: make([]InstanceRecord, n), Done: []string{"ORDERS-SERVICE"}}
	for i := range r.Records {
		ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256)
		id := ip + ":orders-service:8080"
		host := "ip-" + ip + ".eu-west-1.compute.internal"
		dc := DataCenterData{Class: "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", Name: "MyOwn"}
		if i%2 == 0 {
			dc = DataCenterData{Class: "com.netflix.appinfo.AmazonInfo", Name: "Amazon", Metadata: map[string]string{
				"instance-id":       fmt.Sprintf("i-%017x", i),
				"availability-zone": "eu-west-1a",
				"local-ipv4":        ip,
				"instance-type":     "m6i.large",
				"ami-id":            "ami-0abcdef1234567890",
			}}
		}
		r.Records[i] = InstanceRecord{
			App:   "ORDERS-SERVICE",
			ID:    id,
			Clock: uint64(ts+int64(i)) << 16,
			Node:  "heureka-2",
			Instance: &InstanceData{
				InstanceID:       id,
				HostName:         host,
				App:              "ORDERS-SERVICE",
				IPAddr:           ip,
				SID:              "na",
				Status:           "UP",
				OverriddenStatus: "UNKNOWN",
				Port:             PortData{Number: 8080, Enabled: true},
				SecurePort:       PortData{Number: 443},
				CountryID:        1,
				DataCenterInfo:   dc,
				LeaseInfo: LeaseData{
					RenewalIntervalSecs:   30,
					DurationSecs:          90,
					RegistrationTimestamp: ts + int64(i),
					LastRenewalTimestamp:  ts + 30_000 + int64(i),
					ServiceUpTimestamp:    ts + 500 + int64(i),
				},
				Metadata: map[string]string{
					"management.port": "8081",
					"zone":            "eu-west-1a",
					"version":         "2.14.3",
					"git.commit":      "a1b2c3d",
					"startup":         fmt.Sprint(ts + int64(i)),
				},
				AppGroupName:         "ORDERS",
				HomePageURL:          "http://" + host + ":8080/",
				StatusPageURL:        "http://" + host + ":8081/actuator/info",
				HealthCheckURL:       "http://" + host + ":8081/actuator/health",
				VIPAddress:           "orders-service",
				SecureVIPAddress:     "orders-service",
				LastUpdatedTimestamp: ts + 100 + int64(i),
				LastDirtyTimestamp:   ts + 200 + int64(i),
				ActionType:           "ADDED",
				ASGName:              "orders-service-v042",
			},
			LastRenewal: ts + 30_000 + int64(i),
		}
	}
	return r
}

// BenchmarkEncodeRecords256 encodes a batch of 256 realistic records with the
// hand-written codec and, for comparison, with msgpack's reflection.
func BenchmarkEncodeRecords256(b *testing.B) {
	m := realisticRecords(256)
	for _, mode := range codecModes {
		b.Run(mode.name, func(b *testing.B) {
			defer setReflectCodec(mode.reflect)()
			frame, err := Encode(m)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Encode(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeRecords256 decodes the batch of BenchmarkEncodeRecords256.
func BenchmarkDecodeRecords256(b *testing.B) {
	frame, err := Encode(realisticRecords(256))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range codecModes {
		b.Run(mode.name, func(b *testing.B) {
			defer setReflectCodec(mode.reflect)()
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
