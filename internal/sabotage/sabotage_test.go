package sabotage

import "testing"

// Without the sabotage tag nothing can be switched on; with it, only known
// switches can, and On follows Set.
func TestSet(t *testing.T) {
	if !Enabled {
		if err := Set(TombstonesDropped); err == nil {
			t.Fatal("a build without the sabotage tag accepted a switch")
		}
		if On(TombstonesDropped) {
			t.Fatal("On is true without the sabotage tag")
		}
		return
	}
	defer func() { _ = Set() }()
	if err := Set("no-such-switch"); err == nil {
		t.Fatal("an unknown switch was accepted")
	}
	if err := Set(TombstonesDropped); err != nil {
		t.Fatal(err)
	}
	if !On(TombstonesDropped) || On(NoAntiEntropy) {
		t.Fatal("On does not follow Set")
	}
	for _, s := range UnitOnly {
		if err := Set(s); err != nil || !On(s) {
			t.Fatalf("unit-only switch %s: %v", s, err)
		}
	}
}

// The unit-only switches are distinct from the ones `make sabotage` tries,
// and every switch has a distinct name.
func TestSwitchLists(t *testing.T) {
	seen := map[Switch]bool{}
	for _, s := range append(append([]Switch{}, All...), UnitOnly...) {
		if seen[s] {
			t.Fatalf("switch %s listed twice", s)
		}
		seen[s] = true
	}
	for _, s := range []Switch{LateRegistrationOutranksCancel, LeaveWaitsUnbounded, RejoinBelowLeftIncarnation, SyncAnswerDialled, LeaseAgesWallClock, ForwardedRenewalsDropped} {
		if !seen[s] {
			t.Fatalf("%s is not listed", s)
		}
	}
}
