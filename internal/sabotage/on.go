//go:build sabotage

package sabotage

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// Enabled reports whether this build can sabotage at all (built with the
// sabotage tag).
const Enabled = true

var active atomic.Pointer[map[Switch]bool]

func init() {
	var names []Switch
	for _, n := range strings.Split(os.Getenv("HEUREKA_SABOTAGE"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, Switch(n))
		}
	}
	if err := Set(names...); err != nil {
		panic(err) // a typo in a sabotage run must not pass silently
	}
}

// On reports whether s is switched on.
func On(s Switch) bool { return (*active.Load())[s] }

// Set switches exactly the named switches on (none: all off).
func Set(s ...Switch) error {
	m := map[Switch]bool{}
	for _, n := range s {
		if !slices.Contains(All, n) && !slices.Contains(UnitOnly, n) {
			return fmt.Errorf("sabotage: unknown switch %q (known: %v and %v)", n, All, UnitOnly)
		}
		m[n] = true
	}
	active.Store(&m)
	return nil
}
