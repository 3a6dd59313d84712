//go:build !sabotage

package sabotage

// Enabled reports whether this build can sabotage at all (built with the
// sabotage tag).
const Enabled = false

// On reports whether s is switched on; always false without the sabotage
// build tag.
func On(Switch) bool { return false }

// Set switches exactly the named switches on; without the sabotage build tag
// it refuses any.
func Set(s ...Switch) error {
	if len(s) > 0 {
		return errNotBuilt
	}
	return nil
}
