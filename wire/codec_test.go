package wire

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sampleInstance returns an instance with every field set.
func sampleInstance(app, id string) *InstanceData {
	return &InstanceData{
		InstanceID:       id,
		HostName:         id + ".example.com",
		App:              app,
		IPAddr:           "10.1.2.3",
		SID:              "sid",
		Status:           "UP",
		OverriddenStatus: "UNKNOWN",
		Port:             PortData{Number: 8080, Enabled: true},
		SecurePort:       PortData{Number: 8443, Enabled: false},
		CountryID:        1,
		DataCenterInfo: DataCenterData{
			Class:    "com.netflix.appinfo.AmazonInfo",
			Name:     "Amazon",
			Metadata: map[string]string{"instance-id": "i-123", "availability-zone": "eu-west-1a"},
		},
		LeaseInfo: LeaseData{
			RenewalIntervalSecs:   30,
			DurationSecs:          90,
			RegistrationTimestamp: 1_700_000_000_000,
			LastRenewalTimestamp:  1_700_000_030_000,
			EvictionTimestamp:     0,
			ServiceUpTimestamp:    1_700_000_000_500,
		},
		Metadata:                      map[string]string{"zone": "a", "version": "1.2.3"},
		AppGroupName:                  "GROUP",
		HomePageURL:                   "http://" + id + ":8080/",
		StatusPageURL:                 "http://" + id + ":8080/info",
		HealthCheckURL:                "http://" + id + ":8080/health",
		SecureHealthCheckURL:          "https://" + id + ":8443/health",
		VIPAddress:                    "vip",
		SecureVIPAddress:              "svip",
		IsCoordinatingDiscoveryServer: true,
		LastUpdatedTimestamp:          1_700_000_000_100,
		LastDirtyTimestamp:            1_700_000_000_200,
		ActionType:                    "ADDED",
		ASGName:                       "asg",
	}
}

// sampleMessages returns one value of every message, plus edge cases, by name.
func sampleMessages() map[string]Message {
	return map[string]Message{
		"records": &Records{SentAt: 1754500000123, Records: []InstanceRecord{
			{App: "APP", ID: "i-1", Clock: 1 << 40, Node: "node-a", Instance: sampleInstance("APP", "i-1"), LastRenewal: 1_700_000_000_123},
			{App: "APP", ID: "i-2", Clock: 1<<40 + 7, Node: "node-b", Deleted: true},
			{App: "APP", ID: "i-3", Clock: 1<<40 + 9, Node: "node-c", Deleted: true, Evicted: true},
		}, Done: []string{"APP"}},
		"records-empty": &Records{},
		"renewals":      &Renewals{Renewals: []Renewal{{App: "APP", ID: "i-1", Count: 3}, {App: "B", ID: "x", Count: 1}}},
		"digest":        &Digest{Node: "node-a", Apps: []AppDigest{{App: "APP", Hash: 0xdeadbeefcafef00d, Count: 2}}, Reply: true},
		"sync-request": &SyncRequest{Node: "node-b", Apps: []SyncApp{
			{App: "APP", Have: []RecordVersion{{ID: "i-1", Clock: 1 << 40, Node: "node-a"}}}, {App: "OTHER"}}},
		"sync-request-nil": &SyncRequest{},
		"load": &Load{Node: "node-a", WindowMillis: 60000, Renewals: 1234, Expected: 700, Engaged: true, Reason: "engaged: …",
			Alive: []string{"node-a", "node-b", "node-c"}},
		"handoff": &Handoff{Node: "node-a", Apps: []HandoffApp{
			{App: "APP", Leases: []LeaseAge{{ID: "i-1", AgeMillis: 1234}, {ID: "i-2"}}}, {App: "EMPTY"}}, Leaving: true},
	}
}

func TestRoundTrip(t *testing.T) {
	for name, m := range sampleMessages() {
		t.Run(name, func(t *testing.T) {
			b, err := Encode(m)
			require.NoError(t, err)
			require.Equal(t, ProtocolVersion, b[0])
			require.Equal(t, byte(m.Type()), b[1])

			got, err := Decode(b)
			require.NoError(t, err)
			assert.Equal(t, m, got)
			assert.IsType(t, m, got)
		})
	}
}

func TestEncodeIsDeterministic(t *testing.T) {
	m := sampleMessages()["records"]
	first, err := Encode(m)
	require.NoError(t, err)
	for range 20 { // map iteration order varies between runs
		again, err := Encode(m)
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
}

func TestDecodedSharesNoMemoryWithInput(t *testing.T) {
	b, err := Encode(&SyncRequest{Node: "n", Apps: []SyncApp{{App: "APP"}}})
	require.NoError(t, err)
	m, err := Decode(b)
	require.NoError(t, err)
	for i := headerLen; i < len(b); i++ {
		b[i] = 0
	}
	assert.Equal(t, &SyncRequest{Node: "n", Apps: []SyncApp{{App: "APP"}}}, m)
}

func TestVersionMismatchRefused(t *testing.T) {
	b, err := Encode(&Digest{Node: "n"})
	require.NoError(t, err)
	for _, v := range []byte{0, ProtocolVersion + 1, 255} {
		b[0] = v
		m, err := Decode(b)
		require.ErrorIs(t, err, ErrVersion)
		assert.Nil(t, m)
		assert.Contains(t, err.Error(), "got "+strconv.Itoa(int(v)))
	}
}

func TestUnknownTypeRefused(t *testing.T) {
	b, err := Encode(&Digest{Node: "n"})
	require.NoError(t, err)
	for _, tag := range []byte{0, 7, 200} {
		b[1] = tag
		m, err := Decode(b)
		require.ErrorIs(t, err, ErrUnknownType)
		assert.Nil(t, m)
	}
}

// foreign is a Message not defined by this package.
type foreign struct{}

func (foreign) Type() Type { return TypeRecords }

func TestEncodeRefusesNilAndForeign(t *testing.T) {
	_, err := Encode(nil)
	require.ErrorIs(t, err, ErrNilMessage)
	_, err = Encode((*Records)(nil))
	require.ErrorIs(t, err, ErrNilMessage)
	_, err = Encode(foreign{})
	require.ErrorIs(t, err, ErrUnknownType)
}

func TestTypeString(t *testing.T) {
	assert.Equal(t, "records", TypeRecords.String())
	assert.Equal(t, "sync-request", TypeSyncRequest.String())
	assert.Equal(t, "load", TypeLoad.String())
	assert.Equal(t, "handoff", TypeHandoff.String())
	assert.Equal(t, "unknown", Type(0).String())
	assert.Equal(t, "unknown", Type(99).String())
}

func TestTruncatedInputIsAnError(t *testing.T) {
	for name, m := range sampleMessages() {
		b, err := Encode(m)
		require.NoError(t, err)
		for n := range len(b) {
			got, err := Decode(b[:n])
			require.Error(t, err, "%s cut to %d of %d bytes", name, n, len(b))
			require.Nil(t, got)
			require.True(t, errors.Is(err, ErrTruncated) || errors.Is(err, ErrMalformed), "%s cut to %d: %v", name, n, err)
		}
	}
}

func TestGarbageIsAnError(t *testing.T) {
	v, tr := ProtocolVersion, byte(TypeRecords)
	cases := map[string][]byte{
		"empty":            nil,
		"one byte":         {v},
		"no body":          {v, tr},
		"trailing bytes":   {v, tr, 0x91, 0x90, 0x00},
		"reserved code":    {v, tr, 0xc1},
		"wrong shape":      {v, tr, 0x9f, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0}, // 15 fields: no message has so many
		"wrong field type": {v, tr, 0x91, 0xa3, 'a', 'b', 'c'},                                                                      // string where a slice goes
		// A header claiming 2^32-1 records in a 7-byte body must not make
		// the decoder allocate for them.
		"huge array":  {v, tr, 0x91, 0xdd, 0xff, 0xff, 0xff, 0xff},
		"huge map":    {v, byte(TypeDigest), 0xdf, 0xff, 0xff, 0xff, 0xff},
		"huge string": {v, byte(TypeDigest), 0x92, 0xdb, 0xff, 0xff, 0xff, 0xff},
		"deep nesting": append([]byte{v, tr}, func() []byte {
			b := make([]byte, 100)
			for i := range b {
				b[i] = 0x91
			}
			return b
		}()...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := Decode(b)
			require.Error(t, err)
			assert.Nil(t, m)
		})
	}
}

// TestCheckBodyAcceptsEveryType walks one value of each msgpack family
// through the structure check; a wrong length table there would refuse good
// input from peers.
func TestCheckBodyAcceptsEveryType(t *testing.T) {
	cases := map[string][]byte{
		"fixint":   {0x05},
		"negfix":   {0xff},
		"nil":      {0xc0},
		"true":     {0xc3},
		"bin8":     {0xc4, 2, 'a', 'b'},
		"bin16":    {0xc5, 0, 1, 'a'},
		"bin32":    {0xc6, 0, 0, 0, 1, 'a'},
		"ext8":     {0xc7, 1, 9, 'a'},
		"ext16":    {0xc8, 0, 1, 9, 'a'},
		"ext32":    {0xc9, 0, 0, 0, 1, 9, 'a'},
		"float32":  {0xca, 0, 0, 0, 0},
		"float64":  {0xcb, 0, 0, 0, 0, 0, 0, 0, 0},
		"uint8":    {0xcc, 1},
		"uint16":   {0xcd, 0, 1},
		"uint32":   {0xce, 0, 0, 0, 1},
		"uint64":   {0xcf, 0, 0, 0, 0, 0, 0, 0, 1},
		"int8":     {0xd0, 1},
		"int16":    {0xd1, 0, 1},
		"int32":    {0xd2, 0, 0, 0, 1},
		"int64":    {0xd3, 0, 0, 0, 0, 0, 0, 0, 1},
		"fixext1":  {0xd4, 9, 'a'},
		"fixext2":  {0xd5, 9, 'a', 'b'},
		"fixext4":  {0xd6, 9, 1, 2, 3, 4},
		"fixext8":  {0xd7, 9, 1, 2, 3, 4, 5, 6, 7, 8},
		"fixext16": {0xd8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8},
		"str8":     {0xd9, 1, 'a'},
		"str16":    {0xda, 0, 1, 'a'},
		"str32":    {0xdb, 0, 0, 0, 1, 'a'},
		"fixstr":   {0xa1, 'a'},
		"fixarray": {0x92, 1, 2},
		"array16":  {0xdc, 0, 2, 1, 2},
		"array32":  {0xdd, 0, 0, 0, 2, 1, 2},
		"fixmap":   {0x81, 1, 2},
		"map16":    {0xde, 0, 1, 1, 2},
		"map32":    {0xdf, 0, 0, 0, 1, 1, 2},
	}
	for name, b := range cases {
		require.NoError(t, checkBody(b), name)
		for n := range len(b) {
			require.Error(t, checkBody(b[:n]), "%s cut to %d", name, n)
		}
	}
}

// updateCorpus rewrites the committed fuzz seed corpus from sampleMessages:
//
//	go test -run TestFuzzCorpus -update ./wire/
var updateCorpus = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzDecode seed files")

// TestFuzzCorpus checks that testdata/fuzz/FuzzDecode holds one seed file per
// sample message, with the current encoding (or writes them with -update).
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	for name, m := range sampleMessages() {
		b, err := Encode(m)
		require.NoError(t, err)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		path := filepath.Join(dir, "seed-"+name)
		if *updateCorpus {
			require.NoError(t, os.MkdirAll(dir, 0o755))
			require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
			continue
		}
		got, err := os.ReadFile(path)
		require.NoError(t, err, "run go test -run TestFuzzCorpus -update ./wire/")
		assert.Equal(t, want, string(got), "stale seed %s: run go test -run TestFuzzCorpus -update ./wire/", path)
	}
}

// FuzzDecode feeds arbitrary frames to Decode. It must never panic, and what
// it accepts must encode again to a frame that decodes to the same message.
func FuzzDecode(f *testing.F) {
	for _, m := range sampleMessages() {
		b, err := Encode(m)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			require.Nil(t, m)
			return
		}
		again, err := Encode(m)
		require.NoError(t, err)
		m2, err := Decode(again)
		require.NoError(t, err)
		require.Equal(t, m, m2)
	})
}

// batch returns a Records message of n full records, as a fan-out or an
// anti-entropy transfer would carry.
func batch(n int) *Records {
	r := &Records{Records: make([]InstanceRecord, n)}
	for i := range r.Records {
		id := fmt.Sprintf("host-%03d", i)
		r.Records[i] = InstanceRecord{App: "APP", ID: id, Clock: uint64(1_700_000_000_000+i) << 16, Node: "node-a", Instance: sampleInstance("APP", id)}
	}
	return r
}

func BenchmarkEncodeRecords100(b *testing.B) {
	m := batch(100)
	frame, err := Encode(m)
	require.NoError(b, err)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(frame))/100, "B/record")
}

func BenchmarkDecodeRecords100(b *testing.B) {
	frame, err := Encode(batch(100))
	require.NoError(b, err)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(frame))/100, "B/record")
}
