package ci

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// benchstatVerdicts reads benchstat's printed tables: per "unit row" the
// delta column ("~", or "+12.34%").
func benchstatVerdicts(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	row := regexp.MustCompile(`^(\S+)\s.*?\s(~|[+-]\d+\.\d+%|\?)\s+\(p=`)
	unit, headers := "", 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			headers = 0
		case strings.HasPrefix(line, " ") && strings.Contains(line, "│"):
			headers++
			if headers == 2 {
				unit = strings.Fields(strings.Split(line, "│")[1])[0]
			}
		default:
			if m := row.FindStringSubmatch(line); m != nil {
				out[unit+" "+m[1]] = m[2]
			}
		}
	}
	return out
}

// TestImportedGoBenchMatchesBenchstat: go test -bench -count 10 files
// read by bench give, row for row, benchstat's verdicts: "~" exactly
// where benchstat prints "~", and otherwise the same change to 0.01%.
func TestImportedGoBenchMatchesBenchstat(t *testing.T) {
	rows := 0
	for _, pair := range [][2]string{{"old", "new"}, {"old", "same"}, {"new", "same"}} {
		want := benchstatVerdicts(t, filepath.Join("testdata", "gobench", "benchstat-"+pair[0]+"-"+pair[1]+".txt"))
		if len(want) < 5 {
			t.Fatalf("%v: only %d rows read from benchstat's output: %v", pair, len(want), want)
		}
		base, err := ReadFile(filepath.Join("testdata", "gobench", pair[0]+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		cur, err := ReadFile(filepath.Join("testdata", "gobench", pair[1]+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		rep := Compare(base, cur, nil, Options{Seed: 1})
		got := map[string]string{}
		for _, r := range rep.Rows {
			v := "?"
			switch {
			case r.P != nil && !r.Significant:
				v = "~"
			case r.Change != nil:
				v = FormatChange(*r.Change)
			}
			got[r.Metric+" "+r.Config] = v
		}
		for k, w := range want {
			rows++
			if w == "?" {
				continue // benchstat cannot compute a change (e.g. zero medians)
			}
			// benchstat shows "~" for identical samples too (p = 1).
			if got[k] != w && !(w == "~" && got[k] == "?") {
				t.Errorf("%s vs %s, %s: bench %q, benchstat %q", pair[0], pair[1], k, got[k], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%v: bench has %d rows, benchstat %d: %v / %v", pair, len(got), len(want), got, want)
		}
	}
	t.Logf("%d rows agree with benchstat", rows)
}

func TestReadSuiteFormats(t *testing.T) {
	for _, tc := range []struct {
		file, format, config, metric string
		n                            int
	}{
		{"gobench/old.txt", FormatGoTest, "Sort-2", "sec/op", 10},
		{"gobench/old.txt", FormatGoTest, "Alloc-2", "allocs/op", 10},
		{"suites/hf-old.json", FormatHyperfine, "sleep 0.01", "wall_s", 10},
		{"suites/gb-old.json", FormatGoogleBench, "BM_Sort/1000", "cpu_time_s", 8},
		{"suites/gb-old.json", FormatGoogleBench, "BM_Sort/1000", "items", 8},
		{"suites/pytest-old.json", FormatPytest, "test_parse", "time_s", 12},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if f := detectFormat(data); f != tc.format {
			t.Errorf("%s: detected %q, want %q", tc.file, f, tc.format)
		}
		s, err := ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var c *ConfigSamples
		for i := range s.Configs {
			if s.Configs[i].Label == tc.config {
				c = &s.Configs[i]
			}
		}
		if c == nil || len(c.Values[tc.metric]) != tc.n {
			t.Errorf("%s: config %q metric %q: %+v", tc.file, tc.config, tc.metric, s.Configs)
		}
	}
	// Google Benchmark times are seconds per iteration; aggregates skipped.
	s, _ := ReadFile(filepath.Join("testdata", "suites", "gb-old.json"))
	if v := s.Configs[0].Values["real_time_s"][0]; v < 1e-6 || v > 1e-3 || len(s.Configs) != 1 {
		t.Errorf("google benchmark real_time_s %v, configs %d", v, len(s.Configs))
	}
	dir := t.TempDir()
	for name, tc := range map[string]struct{ content, want string }{
		"py.json": {`{"machine_info": {}, "benchmarks": [{"name": "t", "fullname": "a::t", "stats": {"mean": 1}}]}`, "--benchmark-save-data"},
		"hf.json": {`{"results": [{"command": "x", "mean": 1}]}`, `no "times"`},
		"gb.json": {`{"context": {}, "benchmarks": [{"name": "b", "run_type": "aggregate", "real_time": 1}]}`, "no benchmark repetitions"},
		"go.txt":  {"BenchmarkX 10 abc ns/op extra\n", "go-test-bench"},
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(tc.content), 0o644)
		if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
