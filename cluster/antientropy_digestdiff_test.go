package cluster

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/heureka/heureka/wire"
)

// fakeApp is an application as digestDiff reads it.
type fakeApp struct {
	name   string
	digest uint64
}

func (a fakeApp) Name() string   { return a.name }
func (a fakeApp) Digest() uint64 { return a.digest }

// digestDiffByMap is the map-based comparison digestDiff replaced: the
// reference it must agree with.
func digestDiffByMap(ours []fakeApp, theirs []wire.AppDigest) []string {
	local := map[string]uint64{}
	for _, a := range ours {
		local[a.name] = a.digest
	}
	var want []string
	for _, ad := range theirs {
		if h, ok := local[ad.App]; !ok || h != ad.Hash {
			want = append(want, ad.App)
		}
		delete(local, ad.App)
	}
	for app := range local {
		want = append(want, app)
	}
	return want
}

// digestDiff wants exactly what the map-based comparison wanted, on random
// digests with shared, changed, missing and extra applications, sorted or
// not (a peer's digest in another order is sorted first).
func TestDigestDiffMatchesAMap(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for round := range 500 {
		var ours []fakeApp
		var theirs []wire.AppDigest
		for i := range rnd.Intn(60) {
			name := fmt.Sprintf("APP-%03d", i*3+rnd.Intn(3))
			h := uint64(rnd.Intn(4))
			switch rnd.Intn(4) {
			case 0: // ours only
				ours = append(ours, fakeApp{name, h})
			case 1: // theirs only
				theirs = append(theirs, wire.AppDigest{App: name, Hash: h})
			case 2: // both, same digest
				ours = append(ours, fakeApp{name, h})
				theirs = append(theirs, wire.AppDigest{App: name, Hash: h})
			default: // both, maybe different
				ours = append(ours, fakeApp{name, h})
				theirs = append(theirs, wire.AppDigest{App: name, Hash: uint64(rnd.Intn(4))})
			}
		}
		ours = slices.CompactFunc(ours, func(a, b fakeApp) bool { return a.name == b.name })
		if round%2 == 1 {
			rnd.Shuffle(len(theirs), func(i, j int) { theirs[i], theirs[j] = theirs[j], theirs[i] })
		}
		walk := func(yield func(fakeApp) bool) {
			for _, a := range ours {
				if !yield(a) {
					return
				}
			}
		}
		got := digestDiff(walk, theirs)
		assert.ElementsMatch(t, digestDiffByMap(ours, theirs), got, "round %d: ours %v theirs %v", round, ours, theirs)
	}
}
