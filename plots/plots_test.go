package plots

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/trial"
)

type stored struct {
	params  map[string]string
	status  trial.Status
	results map[string]any
	tele    []storage.Telemetry
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// store writes an experiment with the trials into a real SQLite file and
// reads it back as bench plot does.
func store(t *testing.T, info storage.ExperimentInfo, trials []stored) (storage.Experiment, []storage.Trial) {
	t.Helper()
	ctx := context.Background()
	cfg := storage.DefaultConfig()
	cfg.Database = filepath.Join(t.TempDir(), "bench.sqlite")
	st, err := storage.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exp, _, err := st.Experiment(ctx, info)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range trials {
		start := t0.Add(time.Duration(i) * time.Minute)
		tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: s.params, TsStart: start})
		if err != nil {
			t.Fatal(err)
		}
		out := storage.TrialOutcome{Status: s.status, Ts: start.Add(2 * time.Second), Results: s.results, Telemetry: s.tele}
		if s.status != trial.SUCCEEDED {
			out.FailureReason = "exit 1"
		}
		if err := exp.Finish(ctx, tr.ID, out); err != nil {
			t.Fatal(err)
		}
	}
	got, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return exp, got
}

// twoObjectives: score (min) and tput (max), a numeric and a categorical
// tunable, a failed trial and one whose score is text.
func twoObjectives(t *testing.T) (storage.Experiment, []storage.Trial) {
	info := storage.ExperimentInfo{ID: "exp <b>&one</b>", Objectives: []storage.Objective{{Name: "score", Direction: "min"}, {Name: "tput", Direction: "max"}}}
	var ts []stored
	tput := []float64{9, 7, 10, 2, 6, 6.5} // a trade-off: 5 of 6 on the front
	for i, x := range []float64{5, 3, 8, 1, 4, 2} {
		ts = append(ts, stored{
			params:  map[string]string{"level": []string{"1", "6", "9"}[i%3], "fmt": []string{"zlib", "gzip"}[i%2]},
			status:  trial.SUCCEEDED,
			results: map[string]any{"score": x, "tput": tput[i]},
		})
	}
	ts[0].tele = []storage.Telemetry{{Ts: t0, Metric: "cpu", Value: 10.0}, {Ts: t0.Add(time.Second), Metric: "cpu", Value: 30.0},
		{Ts: t0.Add(500 * time.Millisecond), Metric: "mem", Value: "12.5"}, {Ts: t0, Metric: "state", Value: "warm"}}
	ts = append(ts, stored{params: map[string]string{"level": "9", "fmt": "zlib"}, status: trial.FAILED},
		stored{params: map[string]string{"level": "6", "fmt": "gzip"}, status: trial.SUCCEEDED, results: map[string]any{"score": "n/a", "tput": 1.0}})
	return store(t, info, ts)
}

func checkImage(t *testing.T, f *Figure) {
	t.Helper()
	png, err := f.Render("png", 0)
	if err != nil {
		t.Fatalf("%s: png: %v", f.Name, err)
	}
	if len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s: not a PNG (%d bytes)", f.Name, len(png))
	}
	svg, err := f.Render("svg", 0)
	if err != nil {
		t.Fatalf("%s: svg: %v", f.Name, err)
	}
	if len(svg) < 1000 || !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte("</svg>")) {
		t.Errorf("%s: not an SVG (%d bytes)", f.Name, len(svg))
	}
}

func TestAllFiguresRender(t *testing.T) {
	exp, trials := twoObjectives(t)
	figs, notes, err := All(exp.Info(), trials)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes: %q", notes)
	}
	var names []string
	for _, f := range figs {
		names = append(names, f.Name)
		checkImage(t, f)
	}
	if want := "trace tunable-fmt tunable-level pareto"; strings.Join(names, " ") != want {
		t.Errorf("figures %q, want %q", names, want)
	}
	dir := t.TempDir()
	var written []string
	for _, f := range figs {
		ps, err := f.Write(dir, Formats)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, ps...)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 8 || len(written) != 8 {
		t.Errorf("%d files written (%d listed), want 8", len(ents), len(written))
	}
	for _, e := range ents {
		if fi, _ := e.Info(); fi.Size() == 0 {
			t.Errorf("%s is empty", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pareto.svg")); err != nil {
		t.Error(err)
	}
	if p := figs[3]; !strings.Contains(p.Title, "5 of 6 trials on it") {
		t.Errorf("pareto: %q, want 5 of the 6 trials with numeric targets on the front", p.Title)
	}
}

func TestTelemetryFigure(t *testing.T) {
	exp, trials := twoObjectives(t)
	d, err := exp.Trial(context.Background(), trials[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Telemetry(d)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "telemetry-trial-1" || !strings.Contains(f.Title, "2 numeric metrics") {
		t.Errorf("telemetry figure %q %q", f.Name, f.Title)
	}
	checkImage(t, f)
	d2, err := exp.Trial(context.Background(), trials[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Telemetry(d2); !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "trial 2 has no telemetry") {
		t.Errorf("no telemetry: %v", err)
	}
}

// TestTraceBestSoFarRespectsMax: the best so far of a max objective is
// the largest score so far.
func TestTraceBestSoFarRespectsMax(t *testing.T) {
	for _, dir := range []string{"min", "max"} {
		info := storage.ExperimentInfo{ID: "t-" + dir, Objectives: []storage.Objective{{Name: "y", Direction: dir}}}
		var ts []stored
		for _, y := range []float64{3, 5, 1, 4, 6} {
			ts = append(ts, stored{params: map[string]string{"a": "1"}, status: trial.SUCCEEDED, results: map[string]any{"y": y}})
		}
		_, trials := store(t, info, ts)
		_, best := traceSeries(trials, "y", dir == "max")
		var got []float64
		for _, p := range best {
			got = append(got, p.Y)
		}
		want := []float64{3, 3, 1, 1, 1}
		if dir == "max" {
			want = []float64{3, 5, 5, 5, 6}
		}
		if !equal(got, want) {
			t.Errorf("%s: best so far %v, want %v", dir, got, want)
		}
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNothingToPlot(t *testing.T) {
	obj := []storage.Objective{{Name: "score", Direction: "min"}}
	for _, tc := range []struct {
		name   string
		trials []stored
		want   string
	}{
		{"empty", nil, "has no trials"},
		{"failed", []stored{{params: map[string]string{"a": "1"}, status: trial.FAILED}}, "has no successful trial (of 1)"},
		{"text", []stored{{params: map[string]string{"a": "1"}, status: trial.SUCCEEDED, results: map[string]any{"score": "fast"}}}, `has a numeric "score" result`},
	} {
		exp, trials := store(t, storage.ExperimentInfo{ID: tc.name, Objectives: obj}, tc.trials)
		_, _, err := All(exp.Info(), trials)
		if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrNoData saying %q", tc.name, err, tc.want)
		}
		// The report still renders, without plots.
		var buf bytes.Buffer
		if err := WriteReport(&buf, ReportInput{Info: exp.Info(), Trials: trials, Notes: []string{err.Error()}}); err != nil {
			t.Errorf("%s: report: %v", tc.name, err)
		}
		if !strings.Contains(buf.String(), "No plots.") {
			t.Errorf("%s: report without plots does not say so", tc.name)
		}
	}
	// One objective: no Pareto front, and a note saying so.
	exp, trials := store(t, storage.ExperimentInfo{ID: "one", Objectives: obj},
		[]stored{{params: map[string]string{"a": "x"}, status: trial.SUCCEEDED, results: map[string]any{"score": 1.0}}})
	figs, notes, err := All(exp.Info(), trials)
	if err != nil || len(figs) != 2 || len(notes) != 1 || !strings.Contains(notes[0], "one objective") {
		t.Errorf("one objective: %d figures, notes %q, %v", len(figs), notes, err)
	}
	for _, f := range figs {
		checkImage(t, f) // one point: the axes still have a range
	}
}

func TestCompareFigure(t *testing.T) {
	mk := func(name string, vals ...float64) *ci.Samples {
		return &ci.Samples{Name: name, Configs: []ci.ConfigSamples{{Key: "k", Label: "defaults",
			Values: map[string][]float64{"score": vals, "lat": {1, 2}}}}}
	}
	a, b := mk("A", 1, 2, 3, 2.5), mk("B", 2, 3, 4)
	rep := ci.Compare(a, b, nil, ci.Options{Alpha: 0.05, Seed: 1})
	f, err := Compare(rep, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.plots) != 2 {
		t.Errorf("%d panels, want 2 (one per metric)", len(f.plots))
	}
	checkImage(t, f)
	p := filepath.Join(t.TempDir(), "cmp.svg")
	if err := f.WriteFile(p); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(filepath.Join(t.TempDir(), "cmp.pdf")); err == nil {
		t.Error("WriteFile to .pdf: no error")
	}
}

// TestReportPage checks the page: escaped names, one data: image per
// figure, nothing loaded from elsewhere, the best trial.
func TestReportPage(t *testing.T) {
	exp, trials := twoObjectives(t)
	figs, notes, err := All(exp.Info(), trials)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[trial.Status]int{}
	for _, tr := range trials {
		counts[tr.Status]++
	}
	var buf bytes.Buffer
	if err := WriteReport(&buf, ReportInput{Info: exp.Info(), Counts: counts, Trials: trials, Figures: figs, Notes: notes}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "<b>&one") || !strings.Contains(page, "exp &lt;b&gt;&amp;one&lt;/b&gt;") {
		t.Error("the experiment name is not escaped")
	}
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the page has a script")
	}
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[2], "data:image/png;base64,") && !strings.HasPrefix(m[2], "#") {
			t.Errorf("%s=%.60q loads something", m[1], m[2])
		}
	}
	if n := strings.Count(page, `<img class="plot" src="data:image/png;base64,`); n != len(figs) {
		t.Errorf("%d images, want %d", n, len(figs))
	}
	// Trial 4 has the lowest score (1): it is the best and marked.
	if !strings.Contains(page, "<p>Trial 4 (") || !strings.Contains(page, `<tr class="best"><td class="num">4</td>`) {
		t.Error("best trial 4 not shown")
	}
	for _, s := range []string{"SUCCEEDED 7", "FAILED 1", "score (min), tput (max)", "exit 1"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	var ids []int
	for _, tr := range trials {
		ids = append(ids, tr.ID)
	}
	if !sort.IntsAreSorted(ids) {
		t.Errorf("trials not by id: %v", ids)
	}
}

// TestExtremeValues: huge, tiny and equal values and a single telemetry
// sample draw (or fail with an error), never panic.
func TestExtremeValues(t *testing.T) {
	info := storage.ExperimentInfo{ID: "x", Objectives: []storage.Objective{{Name: "y", Direction: "max"}, {Name: "z", Direction: "min"}}}
	var ts []stored
	for i, y := range []float64{1e308, -1e308, 5e-324, 0} {
		ts = append(ts, stored{params: map[string]string{"p": []string{"1e308", "-1e308", "nan", "0"}[i], "q": "7"}, status: trial.SUCCEEDED,
			results: map[string]any{"y": y, "z": 1.0}})
	}
	ts[0].tele = []storage.Telemetry{{Ts: t0, Metric: "one", Value: 1e308}}
	exp, trials := store(t, info, ts)
	figs, _, err := All(exp.Info(), trials)
	if err != nil {
		t.Fatal(err)
	}
	d, err := exp.Trial(context.Background(), trials[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := Telemetry(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(figs, tf) {
		for _, format := range Formats {
			if _, err := f.Render(format, 0); err != nil {
				t.Logf("%s %s: %v", f.Name, format, err)
			}
		}
	}
}

// TestTraceBestSoFarFullFidelityOnly: in a multi-fidelity experiment the
// best so far is full fidelity's, as bench run's best trial and bench
// results --best are (storage.Best): a lower value measured at a low
// fidelity is drawn as a point but is never the best so far.
func TestTraceBestSoFarFullFidelityOnly(t *testing.T) {
	at := func(id int, fid string, y float64) storage.Trial {
		return storage.Trial{ID: id, Status: trial.SUCCEEDED, Results: storage.Metrics{"y": y},
			Metadata: map[string]string{trial.FidelityKey: fid, trial.FidelityMaxKey: "27", trial.FidelityParamKey: "epochs"}}
	}
	trials := []storage.Trial{at(1, "1", 0.5), at(2, "27", 4), at(3, "3", 0.2), at(4, "27", 3), at(5, "27", 5)}
	pts, best := traceSeries(trials, "y", false)
	if len(pts) != 5 {
		t.Errorf("%d points drawn, want every one of the 5 trials", len(pts))
	}
	var got, xs []float64
	for _, p := range best {
		got = append(got, p.Y)
		xs = append(xs, p.X)
	}
	// Trial 1 ran at 1 of 27 epochs: no best yet.
	if want, wantX := []float64{4, 4, 3, 3}, []float64{2, 3, 4, 5}; !equal(got, want) || !equal(xs, wantX) {
		t.Errorf("best so far %v at trials %v, want %v at %v", got, xs, want, wantX)
	}
	info := storage.ExperimentInfo{ID: "mf", Objectives: []storage.Objective{{Name: "y", Direction: "min"}}}
	fig, err := Trace(info, trials[:1])
	if err != nil {
		t.Fatalf("a trace with no full-fidelity trial yet: %v", err)
	}
	if out, err := fig.Render("svg", 96); err != nil || len(out) == 0 {
		t.Errorf("drawing a trace with no full-fidelity trial yet: %d bytes, %v", len(out), err)
	}
}
