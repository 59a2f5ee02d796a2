// Package pyrand reproduces the one random order upstream's runners use:
// Hugging Face datasets' Dataset.shuffle(seed=S), which takes
// numpy.random.default_rng(S).permutation(len(ds)). R2E-Gym's runner
// shuffles every dataset with seed 42 before --start_idx and --k pick
// tasks, so the same flags pick the same tasks only in the same order.
//
// Implemented from numpy's documented algorithms: SeedSequence's hash
// mixing, the PCG64 generator (XSL-RR output), its 32-bit draws (two per
// 64-bit output, low half first), bounded draws by masking and rejection,
// and a Fisher-Yates shuffle from the last element down.
package pyrand

import "math/bits"

// Permutation returns numpy.random.default_rng(seed).permutation(n).
func Permutation(seed uint32, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	g := newPCG64(seed)
	for i := n - 1; i >= 1; i-- {
		j := int(g.interval(uint64(i)))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// SeedSequence constants.
const (
	initA    = 0x43b0d7e5
	multA    = 0x931e8875
	initB    = 0x8b51f9dd
	multB    = 0x58f38ded
	mixMultL = 0xca01f9dd
	mixMultR = 0x4973f715
	xshift   = 16
	poolSize = 4
)

// seedState is SeedSequence(seed).generate_state(n64, uint64) for a seed
// below 2**32 and no spawn key.
func seedState(seed uint32, n64 int) []uint64 {
	entropy := []uint32{seed}
	var pool [poolSize]uint32
	hc := uint32(initA)
	hashmix := func(v uint32) uint32 {
		v ^= hc
		hc *= multA
		v *= hc
		v ^= v >> xshift
		return v
	}
	mix := func(x, y uint32) uint32 {
		r := mixMultL*x - mixMultR*y
		r ^= r >> xshift
		return r
	}
	for i := range pool {
		var e uint32
		if i < len(entropy) {
			e = entropy[i]
		}
		pool[i] = hashmix(e)
	}
	for src := range pool {
		for dst := range pool {
			if src != dst {
				pool[dst] = mix(pool[dst], hashmix(pool[src]))
			}
		}
	}
	words := make([]uint32, 2*n64)
	hb := uint32(initB)
	for i := range words {
		v := pool[i%poolSize]
		v ^= hb
		hb *= multB
		v *= hb
		v ^= v >> xshift
		words[i] = v
	}
	out := make([]uint64, n64)
	for i := range out {
		out[i] = uint64(words[2*i]) | uint64(words[2*i+1])<<32
	}
	return out
}

// pcg64 is numpy's PCG64: a 128-bit LCG with XSL-RR output.
type pcg64 struct {
	hi, lo       uint64 // state
	incHi, incLo uint64
	half         uint32
	hasHalf      bool
}

const (
	multHi = 0x2360ed051fc65da4
	multLo = 0x4385df649fccf645
)

func newPCG64(seed uint32) *pcg64 {
	v := seedState(seed, 4)
	g := &pcg64{}
	// inc = (initseq << 1) | 1, initseq = v[2]:v[3] (high:low).
	g.incHi = v[2]<<1 | v[3]>>63
	g.incLo = v[3]<<1 | 1
	g.step()
	// state += initstate, initstate = v[0]:v[1].
	var c uint64
	g.lo, c = bits.Add64(g.lo, v[1], 0)
	g.hi, _ = bits.Add64(g.hi, v[0], c)
	g.step()
	return g
}

func (g *pcg64) step() {
	// state = state*mult + inc, mod 2**128.
	hi, lo := bits.Mul64(g.lo, multLo)
	hi += g.hi*multLo + g.lo*multHi
	var c uint64
	g.lo, c = bits.Add64(lo, g.incLo, 0)
	g.hi, _ = bits.Add64(hi, g.incHi, c)
}

func (g *pcg64) next64() uint64 {
	g.step()
	return bits.RotateLeft64(g.hi^g.lo, -int(g.hi>>58))
}

func (g *pcg64) next32() uint32 {
	if g.hasHalf {
		g.hasHalf = false
		return g.half
	}
	v := g.next64()
	g.hasHalf, g.half = true, uint32(v>>32)
	return uint32(v)
}

// interval is a uniform draw from [0, max]: masked draws, rejecting those
// above max; 32-bit draws when max fits in them.
func (g *pcg64) interval(max uint64) uint64 {
	if max == 0 {
		return 0
	}
	mask := uint64(1)<<bits.Len64(max) - 1
	if max <= 0xffffffff {
		for {
			if v := uint64(g.next32()) & mask; v <= max {
				return v
			}
		}
	}
	for {
		if v := g.next64() & mask; v <= max {
			return v
		}
	}
}
