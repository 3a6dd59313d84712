package bench

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The histogram's percentiles agree with the exact nearest-rank ones within
// its bucket width, and merging two halves gives the whole.
func TestHistogramPercentiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var all, a, b Histogram
	var exact []time.Duration
	for i := range 100_000 {
		// Mostly around a millisecond, with a tail up to a second.
		d := time.Duration(r.ExpFloat64() * float64(time.Millisecond))
		if i%1000 == 0 {
			d = time.Duration(r.Int64N(int64(time.Second)))
		}
		exact = append(exact, d)
		all.Add(d)
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
	}
	a.Merge(b.Take())
	assert.Zero(t, b.Count(), "taken")
	for _, p := range []float64{50, 99, 99.9, 100} {
		want := Percentile(exact, p)
		got := all.Percentile(p)
		assert.InDelta(t, float64(want), float64(got), float64(want)*0.021+float64(time.Microsecond), "p%v", p)
		assert.GreaterOrEqual(t, got, want, "p%v: a bucket's upper bound", p)
		assert.Equal(t, got, a.Percentile(p), "p%v merged", p)
	}
	assert.Equal(t, Percentile(exact, 100), all.Max())
	assert.Equal(t, 100_000, a.Count())
	var empty Histogram
	assert.Zero(t, empty.Percentile(99))
}
