package netns

import (
	"fmt"
	"net/netip"
	"strings"
)

// Classic BPF programs for tc's cls_bpf, in the text form `tc filter … bpf
// bytecode "…"` takes: "n,code jt jf k,code jt jf k,…".
//
// This kernel has neither netem nor the gact action (`action drop` fails
// with "Failed to load TC action module"), so the programs run in
// direct-action mode (`bpf da bytecode …`) and return the verdict
// themselves: TC_ACT_SHOT drops the packet, TC_ACT_UNSPEC lets the next
// filter decide (and, after the last one, the packet pass). The kernel runs
// a classic program as eBPF after converting it, ancillary loads such as
// `ld rand` included.
//
// Loads are relative to the Ethernet header, on the egress hook and on the
// ingress hook alike (cls_bpf pushes the MAC header back at ingress).

// insn is one classic BPF instruction.
type insn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

const (
	bpfLdW  = 0x20 // ld [k]     (BPF_LD|BPF_W|BPF_ABS)
	bpfLdH  = 0x28 // ldh [k]    (BPF_LD|BPF_H|BPF_ABS)
	bpfModK = 0x94 // mod #k     (BPF_ALU|BPF_MOD|BPF_K)
	bpfJeqK = 0x15 // jeq #k     (BPF_JMP|BPF_JEQ|BPF_K)
	bpfJgeK = 0x35 // jge #k     (BPF_JMP|BPF_JGE|BPF_K)
	bpfRetK = 0x06 // ret #k     (BPF_RET|BPF_K)

	// skfRandom is SKF_AD_OFF + SKF_AD_RANDOM: `ld rand`, a fresh
	// pseudo-random 32-bit number per run of the program.
	skfRandom = 0xFFFFF000 + 56

	actShot   = 2          // TC_ACT_SHOT: drop
	actUnspec = 0xFFFFFFFF // TC_ACT_UNSPEC (-1): no verdict, go on

	etherTypeOff = 12 // Ethernet type
	ipv4SrcOff   = 14 + 12
	etherTypeIP  = 0x0800
)

// bytecode renders prog in tc's format.
func bytecode(prog []insn) string {
	parts := make([]string, 0, len(prog)+1)
	parts = append(parts, fmt.Sprint(len(prog)))
	for _, in := range prog {
		parts = append(parts, fmt.Sprintf("%d %d %d %d", in.code, in.jt, in.jf, in.k))
	}
	return strings.Join(parts, ",")
}

// LossProgram returns a program that drops pct percent of the packets at
// random, independently of each other:
//
//	ld rand
//	mod #100
//	jge #pct, pass, drop
//	drop: ret #TC_ACT_SHOT
//	pass: ret #TC_ACT_UNSPEC
func LossProgram(pct int) string {
	if pct < 0 || pct > 100 {
		panic(fmt.Sprintf("netns: loss %d%% out of range", pct))
	}
	return bytecode([]insn{
		{code: bpfLdW, k: skfRandom},
		{code: bpfModK, k: 100},
		{code: bpfJgeK, jt: 1, jf: 0, k: uint32(pct)},
		{code: bpfRetK, k: actShot},
		{code: bpfRetK, k: actUnspec},
	})
}

// DropFromProgram returns a program that drops every IPv4 packet whose
// source address is one of srcs and has no verdict on anything else (ARP
// passes):
//
//	ldh [12]
//	jeq #0x800, next, pass
//	ld [26]
//	jeq #src1, drop, next
//	…
//	pass: ret #TC_ACT_UNSPEC
//	drop: ret #TC_ACT_SHOT
func DropFromProgram(srcs []netip.Addr) string {
	m := len(srcs)
	if m == 0 || m > 200 {
		panic(fmt.Sprintf("netns: %d source addresses", m))
	}
	prog := []insn{
		{code: bpfLdH, k: etherTypeOff},
		{code: bpfJeqK, jt: 0, jf: uint8(m + 1), k: etherTypeIP},
		{code: bpfLdW, k: ipv4SrcOff},
	}
	for j, a := range srcs {
		if !a.Is4() {
			panic(fmt.Sprintf("netns: %v is not IPv4", a))
		}
		b := a.As4()
		prog = append(prog, insn{code: bpfJeqK, jt: uint8(m - j), jf: 0,
			k: uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])})
	}
	return bytecode(append(prog, insn{code: bpfRetK, k: actUnspec}, insn{code: bpfRetK, k: actShot}))
}
