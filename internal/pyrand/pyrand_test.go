package pyrand

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"testing"
)

// testdata/permutations.json is numpy's own output (numpy 1.24.2, Debian's
// python3-numpy), made with:
//
//	python3 -c "import json, numpy as np; print(json.dumps({'numpy': np.__version__, 'seed': 42,
//	  'permutations': {str(n): [int(x) for x in np.random.default_rng(42).permutation(n)]
//	                   for n in [0,1,2,3,10,100,300,500,2294,4578]},
//	  'seed7_n50': [int(x) for x in np.random.default_rng(7).permutation(50)]}))"
//
// Hugging Face datasets' shuffle(seed=42) selects rows in exactly this order.
type fixture struct {
	Permutations map[string][]int `json:"permutations"`
	Seed7N50     []int            `json:"seed7_n50"`
}

func load(t *testing.T) fixture {
	t.Helper()
	b, err := os.ReadFile("testdata/permutations.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPermutationMatchesNumpy(t *testing.T) {
	f := load(t)
	if len(f.Permutations) < 5 {
		t.Fatalf("fixture has %d permutations", len(f.Permutations))
	}
	for ns, want := range f.Permutations {
		n, _ := strconv.Atoi(ns)
		if got := Permutation(42, n); !slices.Equal(got, want) && !(n == 0 && len(got) == 0) {
			t.Errorf("Permutation(42, %d) differs from numpy's at the first %d", n, firstDiff(got, want))
		}
	}
	if got := Permutation(7, 50); !slices.Equal(got, f.Seed7N50) {
		t.Errorf("Permutation(7, 50) = %v, numpy %v", got, f.Seed7N50)
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func BenchmarkPermutation(b *testing.B) {
	for b.Loop() {
		Permutation(42, 4578)
	}
}
