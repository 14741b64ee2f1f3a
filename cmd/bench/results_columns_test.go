package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func TestRoundCell(t *testing.T) {
	for in, want := range map[string]string{
		"0.8414234567": "0.84142", "1.5312345e-05": "1.5312e-05", "12345.678": "12346", "4088": "4088",
		"-2.5": "-2.5", "100.0": "100", "0": "0", "zlib": "zlib", "": "", "123456789012": "123456789012",
		"3.14159265358979": "3.1416", "1e20": "1e+20", "NaN": "NaN",
	} {
		if got := roundCell(in); got != want {
			t.Errorf("roundCell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResultsColumns: the table shows the tunables, the targets and the
// user's results, rounded; bench.* measurements only with --all or by
// name (a built-in target always); CSV and JSON keep every column in full.
func TestResultsColumns(t *testing.T) {
	info := storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}}
	trials := []storage.Trial{{ID: 1, Status: trial.SUCCEEDED, ConfigID: 1,
		Params:  map[string]string{"level": "6", "ratio": "0.333333333333"},
		Results: storage.Metrics{"score": 0.841423456789, "latency": 12.0, "bench.e.run.wall_s": 1.23456789, "bench.e.run.max_rss_mb": 20.5}}}
	render := func(format string, cols columnSel) string {
		var b bytes.Buffer
		if err := writeTrialColumns(&b, info, trials, format, cols); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	out := render("table", columnSel{})
	for _, w := range []string{"config.level", "config.ratio", "result.score", "result.latency", "0.84142", "0.33333"} {
		if !strings.Contains(out, w) {
			t.Errorf("default table lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "bench.") || strings.Contains(out, "0.841423456789") {
		t.Errorf("default table shows built-in measurements or full precision:\n%s", out)
	}
	if out := render("table", columnSel{all: true}); !strings.Contains(out, "result.bench.e.run.wall_s") || !strings.Contains(out, "1.2346") {
		t.Errorf("--all:\n%s", out)
	}
	out = render("markdown", columnSel{metrics: []string{"bench.*.wall_s"}})
	if !strings.Contains(out, "result.bench.e.run.wall_s") || strings.Contains(out, "max_rss_mb") {
		t.Errorf("--metrics bench.*.wall_s:\n%s", out)
	}
	for _, f := range []string{"csv", "json"} {
		if out := render(f, columnSel{}); !strings.Contains(out, "bench.e.run.max_rss_mb") || !strings.Contains(out, "0.841423456789") {
			t.Errorf("%s lacks a column or precision:\n%s", f, out)
		}
	}
	// A built-in measurement that is a target is shown by default.
	info.Objectives = []storage.Objective{{Name: "bench.e.run.wall_s", Direction: "min"}}
	if out := render("table", columnSel{}); !strings.Contains(out, "result.bench.e.run.wall_s") || strings.Contains(out, "max_rss_mb") {
		t.Errorf("a built-in target is hidden:\n%s", out)
	}
	if err := (columnSel{metrics: []string{"bench.[x"}}).check(); err == nil {
		t.Error("a bad pattern is accepted")
	}
}

// TestResultsReusedColumn: a trial that reused an identical trial's result
// is marked in bench results (a reused_from column naming that trial, in
// the table and CSV; reused_from in JSON); without reuse there is no such
// column.
func TestResultsReusedColumn(t *testing.T) {
	info := storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}}
	trials := []storage.Trial{
		{ID: 1, Status: trial.SUCCEEDED, ConfigID: 1, Params: map[string]string{"level": "6"}, Results: storage.Metrics{"score": 2.0}},
		{ID: 2, Status: trial.SUCCEEDED, ConfigID: 1, Params: map[string]string{"level": "6"}, Results: storage.Metrics{"score": 2.0},
			ReusedFrom: &storage.TrialRef{ExperimentID: "e", TrialID: 1}},
		{ID: 3, Status: trial.SUCCEEDED, ConfigID: 2, Params: map[string]string{"level": "1"}, Results: storage.Metrics{"score": 3.0},
			ReusedFrom: &storage.TrialRef{ExperimentID: "old", TrialID: 7}},
	}
	render := func(format string, trials []storage.Trial) string {
		var b bytes.Buffer
		if err := writeTrialColumns(&b, info, trials, format, columnSel{}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	csvOut := render("csv", trials)
	lines := strings.Split(strings.TrimSpace(csvOut), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], ",reused_from,") {
		t.Fatalf("csv:\n%s", csvOut)
	}
	col := -1
	for i, h := range strings.Split(lines[0], ",") {
		if h == "reused_from" {
			col = i
		}
	}
	for i, want := range []string{"", "1", "old:7"} {
		if got := strings.Split(lines[i+1], ",")[col]; got != want {
			t.Errorf("trial %d reused_from = %q, want %q", i+1, got, want)
		}
	}
	if out := render("table", trials); !strings.Contains(out, "reused_from") || !strings.Contains(out, "old:7") {
		t.Errorf("table:\n%s", out)
	}
	if out := render("json", trials); !strings.Contains(out, `"reused_from"`) {
		t.Errorf("json:\n%s", out)
	}
	if out := render("csv", trials[:1]); strings.Contains(out, "reused_from") {
		t.Errorf("a column for reuse without reuse:\n%s", out)
	}
}
