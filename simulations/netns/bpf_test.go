package netns

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestLossProgram(t *testing.T) {
	got := LossProgram(10)
	want := "5,32 0 0 4294963256,148 0 0 100,53 1 0 10,6 0 0 2,6 0 0 4294967295"
	if got != want {
		t.Fatalf("LossProgram(10) = %q, want %q", got, want)
	}
}

func TestDropFromProgram(t *testing.T) {
	got := DropFromProgram([]netip.Addr{netip.MustParseAddr("10.77.0.10"), netip.MustParseAddr("10.77.0.11")})
	// ldh [12]; jeq #0x800 → +0 / pass (+3); ld [26]; jeq .10 → drop (+2);
	// jeq .11 → drop (+1); ret UNSPEC; ret SHOT.
	want := "7,40 0 0 12,21 0 3 2048,32 0 0 26,21 2 0 172818442,21 1 0 172818443,6 0 0 4294967295,6 0 0 2"
	if got != want {
		t.Fatalf("DropFromProgram = %q, want %q", got, want)
	}
	// The jump targets, checked by running the program on a tiny model.
	for _, tc := range []struct {
		etherType uint32
		src       uint32
		drop      bool
	}{
		{0x0800, 172818442, true},
		{0x0800, 172818443, true},
		{0x0800, 172818444, false},
		{0x0806, 172818442, false}, // ARP passes
	} {
		if d := runModel(t, got, tc.etherType, tc.src); d != tc.drop {
			t.Errorf("type %#x src %d: drop = %v, want %v", tc.etherType, tc.src, d, tc.drop)
		}
	}
}

// runModel interprets the few instructions the programs use, with ldh [12]
// answering etherType and ld [26] answering src.
func runModel(t *testing.T, code string, etherType, src uint32) bool {
	t.Helper()
	prog := parseBytecode(t, code)
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.code {
		case bpfLdH:
			a = etherType
		case bpfLdW:
			a = src
		case bpfJeqK:
			if a == in.k {
				pc += int(in.jt)
			} else {
				pc += int(in.jf)
			}
		case bpfRetK:
			return in.k == actShot
		default:
			t.Fatalf("model: unknown code %d", in.code)
		}
	}
	t.Fatal("model: fell off the end")
	return false
}

func parseBytecode(t *testing.T, s string) []insn {
	t.Helper()
	parts := strings.Split(s, ",")
	var n int
	if _, err := fmt.Sscan(parts[0], &n); err != nil {
		t.Fatal(err)
	}
	var prog []insn
	for _, p := range parts[1:] {
		var in insn
		if _, err := fmt.Sscan(p, &in.code, &in.jt, &in.jf, &in.k); err != nil {
			t.Fatal(err)
		}
		prog = append(prog, in)
	}
	if n != len(prog) {
		t.Fatalf("length %d, %d instructions", n, len(prog))
	}
	return prog
}
