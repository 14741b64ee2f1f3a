package configs

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubstitute(t *testing.T) {
	vars := map[string]any{"a": "A", "n": int64(5), "f": 0.5, "big": 1e20, "tiny": 1e-5, "t": true, "none": nil, "list": []any{"x", int64(1), false}, "whole": 2.0}
	tests := []struct{ in, want string }{
		{"$a", "A"},
		{"${a}b", "Ab"},
		{"$ab", "$ab"}, // unknown name is left alone
		{"x-$a-y", "x-A-y"},
		{"$$a", "$a"}, // escaped dollar
		{"$", "$"},
		{"${a", "${a"},
		{"${}", "${}"},
		{"$1a", "$1a"},
		{"${1a}", "${1a}"},
		{"$n/$f", "5/0.5"},
		{"$whole", "2.0"},
		{"$big $tiny", "1e+20 1e-05"},
		{"$t $none", "True None"},
		{"$list", "['x', 1, False]"},
		{"$a_b", "$a_b"},
		{"$a.b", "A.b"},
		{"cost: $$5 and $a", "cost: $5 and A"},
	}
	for _, tc := range tests {
		if got := Substitute(tc.in, MapLookup(vars)); got != tc.want {
			t.Errorf("Substitute(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSubstituteSourcesInTurn(t *testing.T) {
	first := map[string]any{"a": "$b"}
	second := map[string]any{"b": "B"}
	// Each source is one safe_substitute pass, so a value from the first
	// source can still be expanded by the second.
	if got := Substitute("$a", MapLookup(first), MapLookup(second)); got != "B" {
		t.Errorf("got %q, want B", got)
	}
	// "$$b" becomes "$b" in the first pass and is expanded by the next one,
	// exactly as chained string.Template.safe_substitute calls behave.
	if got := Substitute("$$b", MapLookup(first), MapLookup(second)); got != "B" {
		t.Errorf("got %q, want B", got)
	}
}

func TestPyFloat(t *testing.T) {
	tests := map[float64]string{1: "1.0", 0.1: "0.1", -2.5: "-2.5", 1e16: "1e+16", 123456789012345.0: "123456789012345.0", 1e-4: "0.0001", 1.5e-5: "1.5e-05", math.Inf(1): "inf"}
	for in, want := range tests {
		if got := PyFloat(in); got != want {
			t.Errorf("PyFloat(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestExpandOrderedChains(t *testing.T) {
	t.Setenv("BENCH_TEST_USER", "alice")
	g := NewOrdered()
	g.Set("experiment_id", "MockExperiment")
	g.Set("vm", "$experiment_id-vm")
	g.Set("vnet", "${vm}-vnet")
	g.Set("forward", "$later") // a later key is not yet expanded: kept as written
	g.Set("later", "L")
	g.Set("user", "user:$BENCH_TEST_USER")
	g.Set("list", []any{"$vm", int64(3)})
	g.Set("n", int64(7))
	ExpandOrdered(g, EnvLookup)
	want := map[string]any{
		"experiment_id": "MockExperiment", "vm": "MockExperiment-vm", "vnet": "MockExperiment-vm-vnet",
		"forward": "L", "later": "L", "user": "user:alice", "list": []any{"MockExperiment-vm", int64(3)}, "n": int64(7),
	}
	if diff := cmp.Diff(want, g.Map()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestExpandOrderedForwardReferenceToTemplate(t *testing.T) {
	g := NewOrdered()
	g.Set("a", "$b")
	g.Set("b", "x-$c")
	g.Set("c", "C")
	ExpandOrdered(g)
	// "a" sees "b" before it was expanded, and its own "$c" is then
	// substituted within the same pass only if safe_substitute would: it
	// would not, as substitution is not recursive.
	if diff := cmp.Diff(map[string]any{"a": "x-$c", "b": "x-C", "c": "C"}, g.Map()); diff != "" {
		t.Error(diff)
	}
}

func TestParseScalar(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{"10", int64(10)}, {"-3", int64(-3)}, {"1.5", 1.5}, {"1e3", 1000.0}, {"1_000", int64(1000)},
		{"abc", "abc"}, {"", ""}, {"0x10", "0x10"}, {" 7 ", int64(7)}, {"10.0", 10.0},
	}
	for _, tc := range tests {
		if got := ParseScalar(tc.in); !cmp.Equal(got, tc.want) {
			t.Errorf("ParseScalar(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}
