package bench

import (
	"math"
	"sync"
	"time"
)

// Histogram counts durations in logarithmic buckets 2% wide, from 1 µs to
// about 17 minutes, so that a run of millions of requests keeps its latency
// distribution in a few kilobytes. It is safe for concurrent use; the zero
// value is ready.
type Histogram struct {
	mu     sync.Mutex
	counts []uint32 // by bucket, allocated on the first Add
	n      int
	max    time.Duration
}

// histBuckets covers 1 µs · 1.02^i for i < histBuckets: past 1,000 s.
const histBuckets = 1400

const histGrowth = 1.02

// bucketOf returns the bucket of d.
func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	return min(int(math.Log(us)/math.Log(histGrowth)), histBuckets-1)
}

// bucketTop returns the upper bound of bucket i.
func bucketTop(i int) time.Duration {
	return time.Duration(math.Pow(histGrowth, float64(i+1)) * float64(time.Microsecond))
}

// Add counts d.
func (h *Histogram) Add(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make([]uint32, histBuckets)
	}
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

// Take returns what h counted as a histogram of its own, and empties h.
func (h *Histogram) Take() *Histogram {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := &Histogram{counts: h.counts, n: h.n, max: h.max}
	h.counts, h.n, h.max = nil, 0, 0
	return out
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.n == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.counts == nil {
		h.counts = make([]uint32, histBuckets)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// Count returns how many durations h counted.
func (h *Histogram) Count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// Max returns the longest duration counted (exact).
func (h *Histogram) Max() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.max
}

// Percentile returns the p-th percentile (0 < p ≤ 100) by the
// nearest-rank method, as the upper bound of its bucket (at most 2% above
// the true value), and never above the maximum; 0 when empty.
func (h *Histogram) Percentile(p float64) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == 0 {
		return 0
	}
	rank := max(1, min(h.n, int(math.Ceil(float64(h.n)*p/100))))
	seen := 0
	for i, c := range h.counts {
		seen += int(c)
		if seen >= rank {
			return min(bucketTop(i), h.max)
		}
	}
	return h.max
}
