package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
)

// plotExperiment runs a small experiment "plots-1" in a new folder: two
// objectives (score min, cost max), a numeric and a categorical tunable,
// and telemetry (cpu, mem) in every trial.
func plotExperiment(t *testing.T) string {
	t.Helper()
	dir := experiment(t, "")
	write(t, dir, "env.jsonc", `{
		"name": "plot",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {
			"tunable_params": ["g"],
			"shell_env_params": ["xv", "mode", "trial_id"],
			"run": ["run.sh"],
			"read_results_file": "results.csv",
			"read_telemetry_file": "telemetry.csv"
		}
	}`, 0o644)
	write(t, dir, "run.sh", `#!/bin/sh
set -e
printf 'metric,value\nscore,%s\ncost,%s\n' "$(( (xv - 30) * (xv - 30) ))" "$xv" > results.csv
{ echo timestamp,metric,value
  for i in 0 1 2 3 4; do
    echo "2026-01-01T00:00:0${i}Z,cpu,$(( xv + i * 3 ))"
    echo "2026-01-01T00:00:0${i}Z,mem,$(( 100 - i * i ))"
  done
  echo "2026-01-01T00:00:04Z,phase,done"; } > telemetry.csv
`, 0o755)
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 10, "seed": 1,
		           "optimization_targets": {"score": "min", "cost": "max"}}}`, 0o644)
	r := runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "plots-1", "--no-progress")
	if r.code != 0 {
		t.Fatalf("bench run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return dir
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestPlotCommand: bench plot writes the documented files, --format and
// --trial choose which, bench compare --plot draws a comparison, and bad
// input gives clear messages instead of plots.
func TestPlotCommand(t *testing.T) {
	dir := plotExperiment(t)
	r := runBench(t, dir, "plot", "plots-1", "-o", "out")
	if r.code != 0 {
		t.Fatalf("plot: exit %d\n%s", r.code, r.stderr)
	}
	want := []string{"pareto.png", "pareto.svg", "trace.png", "trace.svg", "tunable-mode.png", "tunable-mode.svg", "tunable-xv.png", "tunable-xv.svg"}
	var got []string
	ents, err := os.ReadDir(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		got = append(got, e.Name())
		b, _ := os.ReadFile(filepath.Join(dir, "out", e.Name()))
		if strings.HasSuffix(e.Name(), ".png") && !bytes.HasPrefix(b, []byte("\x89PNG")) || strings.HasSuffix(e.Name(), ".svg") && !bytes.Contains(b, []byte("<svg")) {
			t.Errorf("%s is not an image (%d bytes)", e.Name(), len(b))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files %q, want %q", got, want)
	}
	if n := len(lines(r.stdout)); n != len(want) {
		t.Errorf("%d paths printed, want %d:\n%s", n, len(want), r.stdout)
	}

	r = runBench(t, dir, "plot", "plots-1", "-o", "svg", "--format", "svg")
	if r.code != 0 || len(lines(r.stdout)) != 4 {
		t.Errorf("--format svg: exit %d, %q", r.code, r.stdout)
	}
	r = runBench(t, dir, "plot", "plots-1", "-o", "tele", "--trial", "2", "--format", "png")
	if r.code != 0 || strings.TrimSpace(r.stdout) != filepath.Join("tele", "telemetry-trial-2.png") {
		t.Errorf("--trial 2: exit %d, %q\n%s", r.code, r.stdout, r.stderr)
	}

	r = runBench(t, dir, "compare", "plots-1", "plots-1", "--plot", "cmp.svg")
	if r.code != 0 {
		t.Errorf("compare --plot: exit %d\n%s", r.code, r.stderr)
	} else if b, _ := os.ReadFile(filepath.Join(dir, "cmp.svg")); !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("compare --plot wrote %d bytes", len(b))
	}

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"plot", "nope"}, 2, `experiment "nope" not found`},
		{[]string{"plot", "plots-1", "--format", "gif"}, 2, "--format must be png, svg or both"},
		{[]string{"plot", "plots-1", "--trial", "99"}, 2, "has no trial 99"},
		{[]string{"compare", "plots-1", "plots-1", "--plot", "x.pdf"}, 2, "must end in .png or .svg"},
		{[]string{"report", "plots-1"}, 2, "-o FILE"},
	} {
		r := runBench(t, dir, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%q: exit %d, want %d saying %q\n%s", tc.args, r.code, tc.code, tc.msg, r.stderr)
		}
	}
}

// TestPlotNothingToPlot: an experiment whose trials all failed gives a
// message, not a panic or empty files; its report still renders.
func TestPlotNothingToPlot(t *testing.T) {
	dir := experiment(t, "exit 3")
	write(t, dir, "opt.jsonc", `{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "FLAML", "max_suggestions": 2, "seed": 1}}`, 0o644)
	runBench(t, dir, "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "F", "--no-progress")
	r := runBench(t, dir, "plot", "F", "-o", "out")
	if r.code != 1 || !strings.Contains(r.stderr, "nothing to plot: experiment F has no successful trial (of 2)") {
		t.Errorf("plot: exit %d\n%s", r.code, r.stderr)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "out")); len(ents) != 0 {
		t.Errorf("%d files written", len(ents))
	}
	r = runBench(t, dir, "report", "F", "-o", "r.html")
	if b, _ := os.ReadFile(filepath.Join(dir, "r.html")); r.code != 0 || !bytes.Contains(b, []byte("No plots.")) {
		t.Errorf("report: exit %d\n%s", r.code, r.stderr)
	}
}

// wrapperPage is a test-only page (the report itself has no scripts): it
// loads the report in an iframe of the same origin and writes, as JSON,
// the report's heading and each plot image's natural and laid-out size
// into the DOM, which chromium --dump-dom prints.
const wrapperPage = `<!DOCTYPE html>
<html><body>
<iframe id="r" src="report.html" style="width:1200px;height:3000px"></iframe>
<pre id="result">pending</pre>
<script>
document.getElementById("r").addEventListener("load", function () {
  var d = this.contentDocument;
  var imgs = [];
  d.querySelectorAll("img").forEach(function (im) {
    var r = im.getBoundingClientRect();
    imgs.push({alt: im.alt, complete: im.complete, natural_w: im.naturalWidth, natural_h: im.naturalHeight, w: r.width, h: r.height});
  });
  var h1 = d.querySelector("h1");
  var tb = d.querySelector("table.trials"), box = d.querySelector("div.trials");
  document.getElementById("result").textContent = JSON.stringify({
    title: d.title, h1: h1 ? h1.textContent : "", images: imgs,
    table_w: tb ? tb.scrollWidth : -1, table_box_w: box ? box.clientWidth : -1,
    table_right: tb ? tb.getBoundingClientRect().right : -1, body_right: d.body.getBoundingClientRect().right,
    scripts: d.querySelectorAll("script").length});
});
</script>
</body></html>`

// TestReportInChromium renders bench report's page in headless Chromium
// (scripts/testenv/chromium.sh installs it) and checks that it shows the
// experiment's name and every plot with a non-zero size, and that a
// screenshot of it can be taken. BENCH_TEST_SCREENSHOT=FILE keeps the
// screenshot for a person to look at.
func TestReportInChromium(t *testing.T) {
	chromium := testenv.Get(t, "BENCH_TEST_CHROMIUM")
	dir := plotExperiment(t)
	r := runBench(t, dir, "report", "plots-1", "-o", "site/report.html")
	if r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	page, err := os.ReadFile(filepath.Join(dir, "site", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	// Trace, mode, xv, Pareto and the best trial's telemetry.
	const wantImages = 5
	if n := bytes.Count(page, []byte(`<img class="plot" src="data:image/png;base64,`)); n != wantImages {
		t.Fatalf("the page has %d plot images, want %d", n, wantImages)
	}
	for _, m := range regexp.MustCompile(`(?i)(src|href)\s*=\s*"([^"]*)"`).FindAllSubmatch(page, -1) {
		if !bytes.HasPrefix(m[2], []byte("data:")) {
			t.Errorf("the page loads %s=%.80q", m[1], m[2])
		}
	}
	write(t, dir, "site/wrapper.html", wrapperPage, 0o644)
	srv := httptest.NewServer(http.FileServer(http.Dir(filepath.Join(dir, "site"))))
	defer srv.Close()

	run := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + t.TempDir()}
		cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %q: %v\n%s", args, err, errb.String())
		}
		return out.Bytes()
	}
	dom := run("--virtual-time-budget=10000", "--dump-dom", srv.URL+"/wrapper.html")
	m := regexp.MustCompile(`(?s)<pre id="result">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("no result in the DOM:\n%.2000s", dom)
	}
	var res struct {
		Title   string `json:"title"`
		H1      string `json:"h1"`
		Scripts int    `json:"scripts"`
		// The trials table's width and its box's (issue 24: it fits or
		// wraps, never cut off on the right).
		TableW     float64 `json:"table_w"`
		TableBoxW  float64 `json:"table_box_w"`
		TableRight float64 `json:"table_right"`
		BodyRight  float64 `json:"body_right"`
		Images     []struct {
			Alt      string  `json:"alt"`
			Complete bool    `json:"complete"`
			NaturalW float64 `json:"natural_w"`
			NaturalH float64 `json:"natural_h"`
			W        float64 `json:"w"`
			H        float64 `json:"h"`
		} `json:"images"`
	}
	raw := html.UnescapeString(string(m[1]))
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		t.Fatalf("result %q: %v", raw, err)
	}
	if res.H1 != "plots-1" || !strings.Contains(res.Title, "plots-1") {
		t.Errorf("the page shows %q (title %q), want the experiment name plots-1", res.H1, res.Title)
	}
	if res.Scripts != 0 {
		t.Errorf("the report has %d scripts", res.Scripts)
	}
	if res.TableW <= 0 || res.TableW > res.TableBoxW+1 || res.TableRight > res.BodyRight+1 {
		t.Errorf("the trials table does not fit: %v wide in a box of %v (right edge %v, page body's %v)", res.TableW, res.TableBoxW, res.TableRight, res.BodyRight)
	}
	t.Logf("trials table %v wide in a box of %v", res.TableW, res.TableBoxW)
	if len(res.Images) != wantImages {
		t.Errorf("Chromium shows %d images, want %d", len(res.Images), wantImages)
	}
	var alts []string
	for _, im := range res.Images {
		alts = append(alts, im.Alt)
		if !im.Complete || im.NaturalW <= 0 || im.NaturalH <= 0 || im.W <= 0 || im.H <= 0 {
			t.Errorf("image %q: loaded %v, natural %vx%v, shown %vx%v", im.Alt, im.Complete, im.NaturalW, im.NaturalH, im.W, im.H)
		}
	}
	sort.Strings(alts)
	t.Logf("images: %q", alts)

	shot := filepath.Join(t.TempDir(), "report.png")
	run("--window-size=1200,3000", "--hide-scrollbars", "--screenshot="+shot, "file://"+filepath.Join(dir, "site", "report.html"))
	b, err := os.ReadFile(shot)
	if err != nil || len(b) < 10000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Fatalf("screenshot: %d bytes, %v", len(b), err)
	}
	if keep := os.Getenv("BENCH_TEST_SCREENSHOT"); keep != "" {
		if err := copyFile(shot, keep); err != nil {
			t.Error(err)
		}
	}
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// TestPlotLogAxes: bench plot --log NAME and --tunables FILE ("log": true)
// put that tunable on a log axis (its axis label says so); without them a
// narrow range stays linear; a bad --tunables file is a usage error
// naming the file.
func TestPlotLogAxes(t *testing.T) {
	dir := plotExperiment(t)
	label := func(sub string) string {
		b, err := os.ReadFile(filepath.Join(dir, sub, "tunable-xv.svg"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if r := runBench(t, dir, "plot", "plots-1", "-o", "lin", "--format", "svg"); r.code != 0 {
		t.Fatalf("plot: exit %d\n%s", r.code, r.stderr)
	}
	if s := label("lin"); !strings.Contains(s, "xv (numeric)<") {
		t.Errorf("xv is not on a linear axis by default")
	}
	if r := runBench(t, dir, "plot", "plots-1", "-o", "log1", "--format", "svg", "--log", "xv"); r.code != 0 {
		t.Fatalf("plot --log: exit %d\n%s", r.code, r.stderr)
	}
	if s := label("log1"); !strings.Contains(s, "xv (numeric, log scale)<") {
		t.Errorf("--log xv: not a log axis")
	}
	write(t, dir, "logtun.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [1, 100], "default": 30, "log": true}}}}`, 0o644)
	if r := runBench(t, dir, "plot", "plots-1", "-o", "log2", "--format", "svg", "--tunables", "logtun.jsonc"); r.code != 0 {
		t.Fatalf("plot --tunables: exit %d\n%s", r.code, r.stderr)
	}
	if s := label("log2"); !strings.Contains(s, "xv (numeric, log scale)<") {
		t.Errorf("--tunables with log xv: not a log axis")
	}
	if r := runBench(t, dir, "report", "plots-1", "-o", "r.html", "--log", "xv"); r.code != 0 {
		t.Errorf("report --log: exit %d\n%s", r.code, r.stderr)
	}
	write(t, dir, "bad.jsonc", `{"g": {"cost": 1, "params": {"xv": {"type": "int", "range": [1, 100], "default": 30, "log": "yes"}}}}`, 0o644)
	if r := runBench(t, dir, "plot", "plots-1", "-o", "bad", "--tunables", "bad.jsonc"); r.code != 2 || !strings.Contains(r.stderr, "bad.jsonc") {
		t.Errorf("bad --tunables: exit %d\n%s", r.code, r.stderr)
	}
}
