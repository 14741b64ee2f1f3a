package ci

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
)

func parseTh(t *testing.T, text string) (*Thresholds, error) {
	t.Helper()
	doc, err := source.Parse("th.jsonc", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return ParseThresholds(doc)
}

func TestParseThresholds(t *testing.T) {
	th, err := parseTh(t, `{
  // latency must not rise more than 5%, throughput must not fall
  "alpha": 0.01,
  "metrics": {"latency_p50": {"max_increase": "5%"}, "throughput": {"max_decrease": "0%"}, "both": {"max_increase": " 2.5 %", "max_decrease": "10%"}},
}`)
	if err != nil {
		t.Fatal(err)
	}
	if th.Alpha != 0.01 || len(th.Metrics) != 3 {
		t.Fatalf("%+v", th)
	}
	if r := th.Metrics[0]; r.Metric != "latency_p50" || *r.MaxIncrease != 0.05 || r.MaxDecrease != nil {
		t.Errorf("rule 0: %+v", r)
	}
	if r := th.Metrics[1]; r.Metric != "throughput" || *r.MaxDecrease != 0 || r.MaxIncrease != nil {
		t.Errorf("rule 1: %+v", r)
	}
	if r := th.Metrics[2]; *r.MaxIncrease != 0.025 || *r.MaxDecrease != 0.1 || r.String() != "max_increase 2.5%, max_decrease 10%" {
		t.Errorf("rule 2: %+v %s", r, r.String())
	}
	th, err = parseTh(t, `{"metrics": {"x": {"max_increase": "0%"}}}`)
	if err != nil || th.Alpha != DefaultAlpha {
		t.Errorf("default alpha: %v %v", th, err)
	}
}

func TestParseThresholdsErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`[]`, "th.jsonc:1:1: a thresholds file must be an object"},
		{`{}`, `missing "metrics"`},
		{`{"metrics": {}}`, "th.jsonc:1:13: at /metrics: \"metrics\" must be a non-empty object"},
		{"{\"metrics\": {\n  \"x\": {\"max_increase\": 5}}}", "th.jsonc:2:25: at /metrics/x/max_increase: a limit is a percentage written as a string"},
		{"{\"metrics\": {\"x\": {\"max_increase\": \"5\"}}}", `limit "5" must end with %`},
		{"{\"metrics\": {\"x\": {\"max_increase\": \"-1%\"}}}", `not a percentage >= 0`},
		{"{\"metrics\": {\"x\": {\"max_increase\": \"abc%\"}}}", `not a percentage >= 0`},
		{"{\"metrics\": {\"x\": {\n \"max_rise\": \"5%\"}}}", `th.jsonc:2:2: at /metrics/x/max_rise: unknown limit "max_rise"`},
		{"{\"metrics\": {\"x\": {}}}", `limits of "x" must be an object`},
		{"{\"alpha\": 2, \"metrics\": {\"x\": {\"max_increase\": \"5%\"}}}", `th.jsonc:1:11: at /alpha: alpha must be a number between 0 and 1`},
		{"{\"metrcs\": {}}", `th.jsonc:1:2: at /metrcs: unknown key "metrcs"`},
	} {
		_, err := parseTh(t, tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.text, err, tc.want)
		}
	}
}

func pct(f float64) *float64 { return &f }

func samples(name string, vals map[string][]float64) *Samples {
	n := 0
	for _, v := range vals {
		n = len(v)
	}
	return &Samples{Name: name, Configs: []ConfigSamples{{Key: "h1", Label: "defaults", Values: vals, Trials: n}}}
}

func TestCompareVerdicts(t *testing.T) {
	base := samples("base", map[string][]float64{
		"lat": {100, 101, 99, 100.5, 99.5},
		"tp":  {50, 51, 49, 50.5, 49.5},
	})
	rules := []Rule{{Metric: "lat", MaxIncrease: pct(0.05)}, {Metric: "tp", MaxDecrease: pct(0)}}
	cases := []struct {
		name    string
		cur     map[string][]float64
		lat, tp string
		overall string
	}{
		{"unchanged", map[string][]float64{"lat": {100.2, 99.8, 100.7, 99.1, 100.1}, "tp": {50.2, 49.8, 50.7, 49.1, 50.1}}, Pass, Pass, Pass},
		{"20% slower", map[string][]float64{"lat": {120, 121, 119, 120.5, 119.5}, "tp": {40, 41, 39, 40.5, 39.5}}, Regression, Regression, Regression},
		{"3% slower: within", map[string][]float64{"lat": {103, 104, 102, 103.5, 102.5}, "tp": {51, 52, 50.5, 51.5, 52.5}}, Pass, Improved, Pass},
		{"faster", map[string][]float64{"lat": {80, 81, 79, 80.5, 79.5}, "tp": {50, 51, 49, 50.5, 49.5}}, Improved, Pass, Pass},
		{"2 samples", map[string][]float64{"lat": {120, 121}, "tp": {40, 41}}, Insufficient, Insufficient, Insufficient},
		{"no tp", map[string][]float64{"lat": {120, 121, 119, 120.5, 119.5}}, Regression, Missing, Regression},
	}
	for _, tc := range cases {
		rep := Compare(base, samples("cur", tc.cur), rules, Options{Seed: 1})
		if len(rep.Rows) != 2 || rep.Rows[0].Verdict != tc.lat || rep.Rows[1].Verdict != tc.tp || rep.Verdict != tc.overall {
			t.Errorf("%s: lat %s tp %s overall %s (%s / %s)", tc.name, rep.Rows[0].Verdict, rep.Rows[1].Verdict, rep.Verdict, rep.Rows[0].Reason, rep.Rows[1].Reason)
		}
	}
	// Without rules: every common metric, "~" when not significant.
	rep := Compare(base, samples("cur", map[string][]float64{"lat": {120, 121, 119, 120.5, 119.5}, "tp": {50.2, 49.8, 50.7, 49.1, 50.1}, "other": {1}}), nil, Options{Seed: 1})
	var buf bytes.Buffer
	if err := rep.WriteText(&buf, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"lat", "+20.00%", "p=0.00794 n=5+5", "tp", "~", "± ∞"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "other") {
		t.Errorf("a metric only one side has is shown:\n%s", out)
	}
}

func TestReportOutputs(t *testing.T) {
	base := samples("base", map[string][]float64{"lat": {100, 101, 99, 100.5, 99.5}})
	cur := samples("cur", map[string][]float64{"lat": {120, 121, 119, 120.5, 119.5}})
	rep := Compare(base, cur, []Rule{{Metric: "lat", MaxIncrease: pct(0.05)}}, Options{Seed: 1})
	var md, ju, js bytes.Buffer
	if err := rep.WriteMarkdown(&md, "bench ci"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### bench ci: ❌ REGRESSION") || !strings.Contains(md.String(), "| ❌ | defaults | `lat` |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if err := rep.WriteJUnit(&ju, "bench.ci", false); err != nil {
		t.Fatal(err)
	}
	var parsed junitSuites
	if err := xml.Unmarshal(ju.Bytes(), &parsed); err != nil {
		t.Fatalf("%v\n%s", err, ju.String())
	}
	if parsed.Tests != 1 || parsed.Failures != 1 || parsed.Suites[0].Cases[0].Failure == nil || parsed.Suites[0].Cases[0].Classname != "bench.ci.defaults" {
		t.Errorf("junit: %+v", parsed)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"verdict": "regression"`) {
		t.Errorf("json:\n%s", js.String())
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	tb := &Table{
		Columns: []string{"experiment_id", "trial_id", "status", "config_id", "config_hash", "config.x", "result.lat", "result.note"},
		Rows: [][]any{
			{"e", int64(1), "SUCCEEDED", int64(1), "h1", int64(3), 1.5, "ok"},
			{"e", int64(2), "FAILED", int64(1), "h1", int64(3), nil, nil},
			{"e", int64(3), "SUCCEEDED", int64(2), "h2", int64(4), 2.5, nil},
			{"e", int64(4), "SUCCEEDED", int64(1), "h1", int64(3), 1.7, nil},
		},
	}
	for _, name := range []string{"r.csv", "r.json"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "r.csv" {
			err = tb.WriteCSV(f)
		} else {
			err = tb.WriteJSON(f)
		}
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		s, err := ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Configs) != 2 || s.Configs[0].Key != "h1" || len(s.Configs[0].Values["lat"]) != 2 || s.Configs[0].Values["lat"][1] != 1.7 ||
			s.Configs[1].Values["lat"][0] != 2.5 || s.Configs[0].Label != "config 1" || s.Configs[0].Params["x"] != "3" {
			t.Errorf("%s: %+v", name, s)
		}
	}
	os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("a,b\n1,2\n"), 0o644)
	if _, err := ReadFile(filepath.Join(dir, "bad.csv")); err == nil {
		t.Error("a CSV without status/result columns was read")
	}
}
