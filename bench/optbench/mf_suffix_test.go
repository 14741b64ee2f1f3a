package main

import "testing"

// parseCase is a method name and what its parser should make of it
// (want only matters when ok).
type parseCase[T comparable] struct {
	in   string
	want T
	ok   bool
}

// checkParse runs parse over cases.
func checkParse[T comparable](t *testing.T, parse func(string) (T, bool), cases []parseCase[T]) {
	t.Helper()
	for _, tc := range cases {
		got, ok := parse(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%s: %+v %v, want %+v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseMFSuffixes: the shared suffix rules: each suffix at most once,
// in order; a flag is its name alone; a value is checked; "-" alone, an
// empty part or text glued to the base name is refused.
func TestParseMFSuffixes(t *testing.T) {
	type opts struct {
		min  float64
		n    int
		flag bool
	}
	parse := func(m string) (opts, bool) {
		var o opts
		ok := parseMFSuffixes(m, mfMin(&o.min), mfInt("n", 2, 5, func(n int) { o.n = n }), mfFlag("f", &o.flag))
		return o, ok
	}
	checkParse(t, parse, []parseCase[opts]{
		{"", opts{}, true},
		{"-min0.5", opts{min: 0.5}, true},
		{"-min2-n5-f", opts{min: 2, n: 5, flag: true}, true},
		{"-n2", opts{n: 2}, true},
		{"-f", opts{flag: true}, true},
		{"-n1", opts{}, false},
		{"-n6", opts{}, false},
		{"-nx", opts{}, false},
		{"-min0", opts{}, false},
		{"-min", opts{}, false},
		{"-min2-min3", opts{}, false},
		{"-f-f", opts{}, false},
		{"-f-n2", opts{}, false},
		{"-fx", opts{}, false},
		{"-", opts{}, false},
		{"-min2--f", opts{}, false},
		{"min2", opts{}, false},
	})
}
