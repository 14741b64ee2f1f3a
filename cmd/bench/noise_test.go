package main

import (
	"slices"
	"testing"

	"github.com/benchtune/bench/trial"
)

func TestConfirmArgs(t *testing.T) {
	got, err := confirmArgs([]string{"E1", "--config", "cli.jsonc", "--top-k=2", "--repeats", "8"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--config", "cli.jsonc", "--experiment_id", "E1", "--confirm_top_k", "2", "--confirm_repeats", "8", "--confirm_now", "true"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// The experiment may come after the options.
	got, err = confirmArgs([]string{"--config", "cli.jsonc", "E2"})
	if err != nil || !slices.Contains(got, "E2") || !slices.Contains(got, "3") {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range [][]string{{"--config", "c"}, {"E", "--repeats", "1"}, {"E", "--top_k", "x"}, {"E", "--top_k"}} {
		if _, err := confirmArgs(bad); err == nil {
			t.Errorf("confirmArgs(%q) accepted", bad)
		}
	}
	if got, err := confirmArgs([]string{"--help"}); got != nil || err != nil {
		t.Errorf("--help: %q %v", got, err)
	}
}

func TestParsePolicies(t *testing.T) {
	objs := trial.Objectives{{Name: "lat"}, {Name: "tps", Max: true}}
	p, err := parsePolicies("median,tps=min", objs)
	if err != nil || p[0].String() != "median" || p[1].String() != "min" {
		t.Errorf("%v %v", p, err)
	}
	if _, err := parsePolicies("avg", objs); err == nil {
		t.Error("unknown policy accepted")
	}
}
