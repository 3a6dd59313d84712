package view

import (
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// randomInstance fills every field of an Instance, found by reflection, so
// that a field added to Instance and not packed fails the round trip. The
// strings are drawn to exercise every packed string form: empty, Eureka's
// constants, repeats of an earlier string, an earlier string with a suffix,
// and new text.
func randomInstance(rng *rand.Rand) *actors.Instance {
	var pool []string
	str := func() string {
		switch rng.Intn(6) {
		case 0:
			return ""
		case 1:
			return packConsts[rng.Intn(len(packConsts))]
		case 2:
			if len(pool) > 0 {
				return pool[rng.Intn(len(pool))]
			}
		case 3:
			if len(pool) > 0 {
				return pool[rng.Intn(len(pool))] + "/x" + strconv.Itoa(rng.Intn(100))
			}
		}
		s := "http://h" + strconv.Itoa(rng.Intn(1e6)) + ":8080/é"
		s = s[:1+rng.Intn(len(s))] // a cut UTF-8 sequence too: bytes are kept as they are
		pool = append(pool, s)
		return s
	}
	strMap := func() map[string]string {
		switch rng.Intn(3) {
		case 0:
			return nil
		case 1:
			return map[string]string{}
		}
		m := map[string]string{}
		for range 1 + rng.Intn(4) {
			m[str()] = str()
		}
		return m
	}
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(str())
		case reflect.Int, reflect.Int64:
			switch rng.Intn(5) {
			case 0:
				v.SetInt(0)
			case 1:
				v.SetInt(-rng.Int63n(1 << 40))
			case 2: // the extremes a client may send, whose differences wrap
				v.SetInt([]int64{math.MinInt64, math.MaxInt64, math.MinInt64 + 1, 1}[rng.Intn(4)])
			default:
				v.SetInt(1754500000000 + rng.Int63n(1<<31))
			}
		case reflect.Bool:
			v.SetBool(rng.Intn(2) == 1)
		case reflect.Map:
			v.Set(reflect.ValueOf(strMap()))
		case reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		default:
			panic("randomInstance: a field of kind " + v.Kind().String() + " to fill and to pack")
		}
	}
	in := new(actors.Instance)
	fill(reflect.ValueOf(in).Elem())
	return in
}

// A packed state unpacks to the state it was packed from, field for field,
// and leads with the state's id.
func TestPackRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 5000 {
		in := randomInstance(rng)
		s := pack(in)
		require.Equal(t, in.ID(), packedID(s), "instance %d", i)
		var out actors.Instance
		ok := unpackInto(&out, s, &unpackScratch{})
		require.True(t, ok, "instance %d", i)
		require.Equal(t, *in, out, "instance %d: %q", i, s)

		// A piece unpacks it alike, and so does the pooled path that
		// encoding takes (reusing its Instance, maps and arena).
		p := &piece{str: s}
		require.Equal(t, in, p.state())
		require.Equal(t, fmt.Sprintf("%+v", *in), string(appendPacked(nil, dumpEncoder{}, s)), "instance %d", i)
	}
}

// dumpEncoder encodes an instance as every field of it (fmt's %+v, which
// prints maps sorted by key).
type dumpEncoder struct{ *lineEncoder }

func (dumpEncoder) AppendInstance(dst []byte, in *actors.Instance) []byte {
	return fmt.Appendf(dst, "%+v", *in)
}

// A damaged packed state is reported, never a panic: unpacking every
// prefix of packed states, and the states with a byte changed.
func TestUnpackDamaged(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for range 200 {
		s := pack(randomInstance(rng))
		for n := range len(s) {
			var out actors.Instance
			ok := unpackInto(&out, s[:n], &unpackScratch{})
			assert.False(t, ok, "a prefix of %d of %d bytes", n, len(s))
		}
		b := []byte(s)
		b[rng.Intn(len(b))] ^= byte(1 + rng.Intn(255))
		var out actors.Instance
		assert.NotPanics(t, func() { unpackInto(&out, string(b), &unpackScratch{}) })
	}
}

// A deleted state in the delta is held packed, and a live state is not.
func TestDeltaPacksDeletedStates(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	f.add("A", "a2", actors.StatusUp)
	f.remove("A", "a1")
	g := v.Snapshot().deltaApp("A")
	gone, live := g.findPiece("a1"), g.findPiece("a2")
	require.NotNil(t, gone)
	require.NotNil(t, live)
	assert.Nil(t, gone.inst, "the deleted state is packed")
	assert.Equal(t, "a1", gone.key())
	assert.Equal(t, actors.ActionDeleted, gone.state().ActionType)
	assert.NotNil(t, live.inst)
	assert.Equal(t, "a2", live.str, "a live piece's string is its id")
}
