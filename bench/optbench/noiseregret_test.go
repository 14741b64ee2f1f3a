package main

import (
	"bytes"
	"regexp"
	"testing"
)

// noiseRegret runs optbench with args (a -noise run at σ = 10%) and
// returns its output and the per-seed deployed regrets on method's line
// (the first one, for one function).
func noiseRegret(t *testing.T, method string, args ...string) (out, perSeed string) {
	t.Helper()
	var b bytes.Buffer
	if err := run(args, &b); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`σ=10% ` + regexp.QuoteMeta(method) + ` .*; per seed (.*)`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("%v: no per-seed regret of %s in\n%s", args, method, b.String())
	}
	return b.String(), m[1]
}
