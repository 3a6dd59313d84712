package reference_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// observedBy names the tests other than TestDifferential that check a
// README row.
var observedBy = map[string]string{"read-cache": "TestReadCacheLag"}

// TestReadCacheLag checks README row read-cache against a reference server
// as it ships (read-only cache on): a registration is not in the
// reference's next full fetch, and it is in Heureka's. The read-only cache
// is refreshed every 30 s, at multiples of 30 s of the wall clock; a
// refresh that falls between the reads hides the lag, so the check tries
// up to three times with a new instance.
func TestReadCacheLag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	ids, err := tableIDs(string(readme))
	require.NoError(t, err)
	require.Contains(t, ids, "read-cache", "README.md's table has no row read-cache")

	r := cachingReference(t)
	n := startHeureka(t)
	read := get("GET apps JSON", "/apps", jsonAccept)
	for attempt := 1; attempt <= 3; attempt++ {
		i := base("CACHE-SERVICE", "cache-"+string(rune('0'+attempt)), 40+attempt)
		before, err := send(r.url, read)
		require.NoError(t, err)
		_, err = send(n.URL(), read)
		require.NoError(t, err)
		for _, url := range []string{r.url, n.URL()} {
			a, err := send(url, registerJSON("register", i))
			require.NoError(t, err)
			require.Equal(t, http.StatusNoContent, a.Status, "register on %s: %s", url, a.Body)
		}
		refA, err := send(r.url, read)
		require.NoError(t, err)
		heuA, err := send(n.URL(), read)
		require.NoError(t, err)
		assert.Contains(t, string(heuA.Body), `"instanceId":"`+i.id+`"`, "Heureka's next read has the registration")
		if bytes.Equal(before.Body, refA.Body) && !strings.Contains(string(refA.Body), i.id) {
			t.Logf("README row read-cache: the reference's read after a registration (attempt %d) repeats the one before it", attempt)
			return
		}
		t.Logf("attempt %d: the reference's cache was refreshed between the reads; again", attempt)
	}
	t.Error("README row read-cache: the reference's read-only cache showed every registration at once; is the row still true?")
}
