package main

import (
	"bytes"
	"strings"
	"testing"
)

// -noise-kernel loo with the staged rounds on the Matérn kernel without
// the output warping runs end to end, on held-out seeds, and says so; bad
// values of the new flags are refused.
func TestNoiseKernelLOOStaged(t *testing.T) {
	var out bytes.Buffer
	args := []string{"-noise", "0.1", "-funcs", "branin", "-seeds", "2", "-budget", "40", "-refine", "staged", "-refine-per-seed",
		"-noise-kernel", "loo", "-staged-kernel", "matern", "-staged-warp", "off", "-noise-seed-offset", "40"}
	if err := run(args, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"noise-aware kernel: loo", "staged rounds: kernel matern, output warping off", "seeds 41-42", "best measured per seed "} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range [][]string{{"-staged-kernel", "rbf"}, {"-staged-warp", "maybe"}} {
		err := run(append([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "1", "-budget", "40", "-refine", "staged"}, bad...), &out)
		if err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%v: error %v", bad, err)
		}
	}
}

// With the offset, seed i of the table is seed offset+i: the first seed
// of -noise-seed-offset 1 is the second of a run without it.
func TestNoiseSeedOffset(t *testing.T) {
	defer func() { noiseSeedOffset = 0 }()
	cfg := config{seeds: 2, budget: 20, workers: 1}
	p := braninProblem()
	a, _, err := noiseSeeds(cfg, p, "naive", 0.1)
	if err != nil {
		t.Fatal(err)
	}
	noiseSeedOffset = 1
	b, _, err := noiseSeeds(cfg, p, "naive", 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if a[1] != b[0] {
		t.Errorf("seed 2 %v, seed 1 with offset 1 %v", a[1], b[0])
	}
}
