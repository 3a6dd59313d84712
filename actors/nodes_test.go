package actors

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Names get stable numbers, from any number of goroutines, and a tombstone
// keeps its version through them.
func TestNodeTableNumbersNames(t *testing.T) {
	var tab nodeTable
	var wg sync.WaitGroup
	ids := make([][20]nodeID, 4)
	for g := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ids[g] {
				ids[g][i] = tab.id(fmt.Sprintf("node-%d", i))
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		name := fmt.Sprintf("node-%d", i)
		for g := range ids {
			require.Equal(t, ids[0][i], ids[g][i], "one number per name")
		}
		assert.Equal(t, name, tab.name(ids[0][i]))
	}

	a := newAppState("APP", &appOptions{node: "n1"})
	v := Version{Clock: 42 << hlcLogicalBits, Node: "node-7"}
	tomb := a.newTombstone(v, true, 9)
	assert.Equal(t, v, a.version(tomb))
	assert.True(t, tomb.evicted)
	assert.Equal(t, int64(9), tomb.dirty)
}
