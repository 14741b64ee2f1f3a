package plots

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// logExperiment: two targets, a log-scale tunable buffer_mb (1..4096 MB),
// a linear one, and trial 9 reusing trial 2's result.
func logExperiment() (storage.ExperimentInfo, []storage.Trial) {
	info := storage.ExperimentInfo{ID: "logx", Objectives: []storage.Objective{{Name: "latency", Direction: "min"}, {Name: "tput", Direction: "max"}}}
	var trials []storage.Trial
	bufs := []int{1, 4, 16, 64, 256, 1024, 4096, 2, 4}
	for i, b := range bufs {
		tr := storage.Trial{ExperimentID: "logx", ID: i + 1, Status: trial.SUCCEEDED,
			Params:  map[string]string{"buffer_mb": strconv.Itoa(b), "threads": strconv.Itoa(1 + i%4)},
			Results: storage.Metrics{"latency": 100.0/float64(b+1) + float64(i), "tput": float64(b%97) + float64(i)}}
		if i == 8 {
			tr.ReusedFrom = &storage.TrialRef{ExperimentID: "logx", TrialID: 2}
			tr.Results = trials[1].Results
		}
		trials = append(trials, tr)
	}
	return info, trials
}

func svgOf(t *testing.T, f *Figure) string {
	t.Helper()
	b, err := f.Render("svg", 0)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("BENCH_PLOTS_KEEP"); dir != "" {
		os.WriteFile(dir+"/"+f.Name+".svg", b, 0o644)
		png, _ := f.Render("png", 0)
		os.WriteFile(dir+"/"+f.Name+".png", png, 0o644)
	}
	return string(b)
}

var svgText = regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)

func texts(svg string) map[string]int {
	out := map[string]int{}
	for _, m := range svgText.FindAllStringSubmatch(svg, -1) {
		out[strings.TrimSpace(m[1])]++
	}
	return out
}

// TestLogAxisTunable: a tunable named in Options.LogX is drawn on a log
// axis, labelled at powers of ten (1, 10, 100, 1000), and says so in its
// axis label; without the option a tunable spanning under three decades
// stays linear.
func TestLogAxisTunable(t *testing.T) {
	info, trials := logExperiment()
	figs, err := TunablesWith(info, trials, Options{LogX: map[string]bool{"buffer_mb": true}})
	if err != nil {
		t.Fatal(err)
	}
	var buf, thr string
	for _, f := range figs {
		switch f.Name {
		case "tunable-buffer_mb":
			buf = svgOf(t, f)
		case "tunable-threads":
			thr = svgOf(t, f)
		}
	}
	tx := texts(buf)
	for _, want := range []string{"1", "10", "100", "1000", "buffer_mb (numeric, log scale)"} {
		if tx[want] == 0 {
			t.Errorf("log axis lacks the label %q: %v", want, tx)
		}
	}
	if tx["2000"] > 0 || tx["3000"] > 0 {
		t.Errorf("a linear tick on the log axis: %v", tx)
	}
	if tt := texts(thr); tt["threads (numeric)"] == 0 {
		t.Errorf("threads is not a linear numeric axis: %v", tt)
	}
	// Three decades or more is a log axis without being named.
	figs, err = TunablesWith(info, trials, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tx := texts(svgOf(t, figs[0])); figs[0].Name != "tunable-buffer_mb" || tx["buffer_mb (numeric, log scale)"] == 0 {
		t.Errorf("%s: %v", figs[0].Name, tx)
	}
}

// TestTraceEveryTarget: with two objectives the trace has one plot per
// target, each titled with it.
func TestTraceEveryTarget(t *testing.T) {
	info, trials := logExperiment()
	f, err := Trace(info, trials)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.plots) != 2 {
		t.Fatalf("%d plots, want 2", len(f.plots))
	}
	tx := texts(svgOf(t, f))
	for _, want := range []string{"Optimization trace of logx: latency", "Optimization trace of logx: tput"} {
		if tx[want] != 1 {
			t.Errorf("no plot %q: %v", want, tx)
		}
	}
}

var svgFill = regexp.MustCompile(`fill:(#[0-9a-fA-F]{6})`)

// TestColourByOrderAndReused: the points are coloured by trial order
// (the first and last trial in the legend with the two end colours, a
// distinct colour per trial in between), the reused trial is a cross
// (legend "reused result (1)"), and the y axis has more than three labels.
func TestColourByOrderAndReused(t *testing.T) {
	info, trials := logExperiment()
	figs, err := TunablesWith(info, trials, Options{})
	if err != nil {
		t.Fatal(err)
	}
	svg := svgOf(t, figs[1]) // threads
	tx := texts(svg)
	for _, want := range []string{"trial 1 (first)", "trial 9 (last)", "reused result (1)"} {
		if tx[want] == 0 {
			t.Errorf("legend lacks %q: %v", want, tx)
		}
	}
	colours := map[string]int{}
	for _, m := range svgFill.FindAllStringSubmatch(svg, -1) {
		colours[strings.ToLower(m[1])]++
	}
	first, last := orderColor(0, 9), orderColor(8, 9)
	hex := func(r, g, b uint8) string {
		return "#" + strconv.FormatUint(uint64(r)<<16|uint64(g)<<8|uint64(b)|1<<24, 16)[1:]
	}
	if colours[hex(first.R, first.G, first.B)] < 2 {
		t.Errorf("the first trial's colour %s is not on a point and in the legend: %v", hex(first.R, first.G, first.B), colours)
	}
	distinct := 0
	for i := 0; i < 8; i++ { // trial 9 is the reused cross (stroked, not filled)
		c := orderColor(i, 9)
		if colours[hex(c.R, c.G, c.B)] > 0 {
			distinct++
		}
	}
	if distinct != 8 {
		t.Errorf("%d of 8 measured trials have their order colour: %v", distinct, colours)
	}
	if !strings.Contains(strings.ToLower(svg), `fill:none;stroke:`+hex(last.R, last.G, last.B)) {
		t.Errorf("the reused trial 9 is not a cross in the last trial's colour")
	}
	// More y ticks than gonum's default three.
	labels := 0
	for _, tk := range (denseTicks{}).Ticks(0, 30) {
		if tk.Label != "" {
			labels++
		}
	}
	if labels < 6 {
		t.Errorf("%d labelled ticks on 0..30", labels)
	}
}

// TestReportReusedAndWrap: bench report marks a reused trial in its
// trials table (naming the trial it copied) and lets the table wrap
// (width 100%, cells break long words) instead of running off the right.
func TestReportReusedAndWrap(t *testing.T) {
	info, trials := logExperiment()
	var buf strings.Builder
	if err := WriteReport(&buf, ReportInput{Info: info, Trials: trials}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, `<tr class="reused"><td class="num">9</td><td>SUCCEEDED <span class="reused-mark"`) ||
		!strings.Contains(page, "↺ reused trial 2</span>") {
		t.Errorf("trial 9 is not marked as reusing trial 2:\n%s", page)
	}
	if strings.Count(page, "reused-mark\"") != 1 {
		t.Errorf("%d reused marks, want 1", strings.Count(page, "reused-mark\""))
	}
	for _, css := range []string{"table.trials { width: 100%; }", "overflow-wrap: anywhere", "<th>buffer_<wbr>mb</th>"} {
		if !strings.Contains(page, css) {
			t.Errorf("the page lacks %q", css)
		}
	}
}
