package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/benchtune/bench/internal/testenv"
)

// chromiumPath is the Chromium the browser tests drive: BENCH_TEST_CHROMIUM
// (scripts/testenv/chromium.sh installs it), else one on PATH; without
// either the test skips (fails under BENCH_TEST_STRICT=1).
func chromiumPath(t *testing.T) string {
	if p := os.Getenv("BENCH_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return testenv.Get(t, "BENCH_TEST_CHROMIUM")
}

// uiExperiment writes a benchmark whose trials wait for a release file
// (release-N for trial N, or release-all) before they write their two
// results, so that the test decides when each trial finishes. buf is a
// log-scale tunable.
func uiExperiment(t *testing.T, trials int) string {
	dir := t.TempDir()
	write(t, dir, "tunables.jsonc", `{"g": {"cost": 1, "params": {
		"xv": {"type": "int", "range": [0, 100], "default": 50},
		"buf": {"type": "int", "range": [1, 65536], "default": 64, "log": true},
		"mode": {"type": "categorical", "values": ["a", "b", "c"], "default": "a"}}}}`, 0o644)
	write(t, dir, "env.jsonc", `{
		"name": "uienv",
		"class": "mlos_bench.environments.local.LocalEnv",
		"include_tunables": ["tunables.jsonc"],
		"config": {
			"tunable_params": ["g"],
			"const_args": {"marker_dir": "`+dir+`"},
			"shell_env_params": ["xv", "buf", "mode", "trial_id", "marker_dir"],
			"run": ["./run.sh"],
			"read_results_file": "results.csv",
			"read_telemetry_file": "telemetry.csv"
		}
	}`, 0o644)
	write(t, dir, "run.sh", `#!/bin/sh
set -e
echo "trial $trial_id: xv=$xv buf=$buf mode=$mode"
while [ ! -e "$marker_dir/release-$trial_id" ] && [ ! -e "$marker_dir/release-all" ]; do sleep 0.05; done
t0=$(date -u +%s)
printf '%s,rss_mb,%s\n%s,rss_mb,%s\n' "$(date -u -d "@$t0" +%Y-%m-%dT%H:%M:%SZ)" "$((xv + 10))" "$(date -u -d "@$((t0 + 1))" +%Y-%m-%dT%H:%M:%SZ)" "$((xv + 20))" > telemetry.csv
printf 'metric,value\nscore,%s\nlatency,%s\n' "$(( (xv - 30) * (xv - 30) ))" "$(( 100000 / (buf + 10) + xv ))" > results.csv
`, 0o755)
	write(t, dir, "opt.jsonc", fmt.Sprintf(`{"class": "mlos_bench.optimizers.MlosCoreOptimizer",
		"config": {"optimizer_type": "RANDOM", "max_suggestions": %d, "seed": 5,
			"optimization_targets": {"score": "min", "latency": "min"}}}`, trials), 0o644)
	return dir
}

// waitAddr waits for a bench process's log to print its dashboard's
// address.
func waitAddr(t *testing.T, logPath string, cmd *exec.Cmd) string {
	t.Helper()
	re := regexp.MustCompile(`dashboard of .* at (http://[0-9.:]+)`)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		f, err := os.Open(logPath)
		if err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					f.Close()
					return m[1]
				}
			}
			f.Close()
		}
		if cmd.ProcessState != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(logPath)
	t.Fatalf("no dashboard address in the log:\n%s", b)
	return ""
}

// TestDashboardInChromium is issue 24's test as a person would do it:
// bench ui on an experiment that is still running, opened in headless
// Chromium. Every chart has drawn its marks; two more trials finish and
// show on the page within 2 s of being stored, without a reload; the
// trials table sorts by a click on its header; a click on a trial opens
// its detail; a click on bench run --ui-actions's stop button stops a
// running trial. Screenshots go to a temp folder (BENCH_TEST_SCREENSHOT_DIR
// keeps them).
func TestDashboardInChromium(t *testing.T) {
	chromium := chromiumPath(t)
	dir := uiExperiment(t, 9)
	tmp := t.TempDir()
	shots := os.Getenv("BENCH_TEST_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	for i := 1; i <= 5; i++ {
		write(t, dir, "release-"+strconv.Itoa(i), "", 0o644)
	}
	run := startBench(t, dir, tmp, "run", "run", "--environment", "env.jsonc", "--optimizer", "opt.jsonc", "--experiment_id", "uiexp",
		"--no-progress", "--ui", "127.0.0.1:0", "--ui-actions")
	runDone := make(chan error, 1)
	go func() { runDone <- run.Wait() }()
	t.Cleanup(func() {
		write(t, dir, "release-all", "", 0o644)
		select {
		case err := <-runDone:
			if err != nil {
				b, _ := os.ReadFile(filepath.Join(tmp, "run.log"))
				t.Errorf("bench run: %v\n%s", err, b)
			}
		case <-time.After(2 * time.Minute):
			run.Process.Kill()
			t.Error("bench run did not finish")
		}
	})
	runUI := waitAddr(t, filepath.Join(tmp, "run.log"), run)

	db, err := sql.Open("sqlite", filepath.Join(dir, "bench.sqlite")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	succeeded := func() int {
		var n int
		db.QueryRow(`SELECT COUNT(*) FROM trial WHERE exp_id = 'uiexp' AND status = 'SUCCEEDED'`).Scan(&n)
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				b, _ := os.ReadFile(filepath.Join(tmp, "run.log"))
				t.Fatalf("timed out waiting for %s\n%s", what, b)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor("5 trials", func() bool { return succeeded() == 5 })

	// bench run --ui serves the running experiment too.
	resp, err := http.Get(runUI + "/e/uiexp")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("bench run --ui: %v %v", resp, err)
	}
	resp.Body.Close()

	ui := startBench(t, dir, tmp, "ui", "ui", "--listen", "127.0.0.1:0")
	t.Cleanup(func() { ui.Process.Signal(syscall.SIGINT); ui.Wait() })
	addr := waitAddr(t, filepath.Join(tmp, "ui.log"), ui)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1300, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	bctx, cancelB := chromedp.NewContext(actx)
	defer cancelB()
	// The first action starts the browser: no timeout on its context
	// (chromedp.Run's rule); the later ones get one.
	if err := chromedp.Do(bctx, chromedp.Navigate(addr+"/e/uiexp")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	defer cancel()
	screenshot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		p := filepath.Join(shots, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s (%d bytes)", p, len(png))
	}
	eval := func(js string, out any) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js))
		if err != nil {
			t.Fatalf("evaluating %.80q: %v", js, err)
		}
		if err := json.Unmarshal(v, out); err != nil {
			t.Fatalf("evaluating %.80q: %s: %v", js, v, err)
		}
	}
	// until evaluates a condition every 20 ms until it holds.
	until := func(what, cond string, limit time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for {
			var ok bool
			eval(cond, &ok)
			if ok {
				return time.Since(start)
			}
			if time.Since(start) > limit {
				t.Fatalf("waited %v for %s", limit, what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible)); err != nil {
			t.Fatalf("click %s: %v", sel, err)
		}
	}

	// Every chart: a non-empty SVG with one mark per successful trial.
	const countJS = `Array.from(document.querySelectorAll("figure[data-chart]")).map(f => {
		const s = f.querySelector("svg");
		return {chart: f.dataset.chart, said: +(f.dataset.marks || 0),
			w: s ? s.getBoundingClientRect().width : 0, h: s ? s.getBoundingClientRect().height : 0,
			marks: f.querySelectorAll("svg .mark").length, lines: f.querySelectorAll("svg .line").length,
			bars: f.querySelectorAll("svg .bar").length, cells: f.querySelectorAll("svg .cell").length,
			polylines: f.querySelectorAll("svg polyline").length};
	})`
	type chartInfo struct {
		Chart                                string
		Said                                 int
		W, H                                 float64
		Marks, Lines, Bars, Cells, Polylines int
	}
	until("the trials table", `document.readyState === "complete" && !!document.getElementById("trials-table")`, time.Minute)
	checkCharts := func(n int) {
		t.Helper()
		var charts []chartInfo
		eval(countJS, &charts)
		want := map[string]int{"trace": 2, "parallel": 1, "importance": 1, "slice": 3, "contour": 1, "pareto": 1, "hypervolume": 1}
		got := map[string]int{}
		for _, c := range charts {
			got[c.Chart]++
			if c.W < 100 || c.H < 100 {
				t.Errorf("%s chart is %vx%v", c.Chart, c.W, c.H)
			}
			var have, wantMarks int
			switch c.Chart {
			case "trace", "slice", "pareto":
				have, wantMarks = c.Marks, n
			case "contour":
				have, wantMarks = c.Marks, n
				if c.Cells != 28*28 {
					t.Errorf("contour has %d cells, want %d", c.Cells, 28*28)
				}
			case "parallel":
				have, wantMarks = c.Lines, n
			case "importance":
				have, wantMarks = c.Bars, 3
			case "hypervolume":
				have, wantMarks = c.Polylines, 1
			}
			if have != wantMarks {
				t.Errorf("%s chart: %d marks, want %d (%+v)", c.Chart, have, wantMarks, c)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("charts %v, want %v", got, want)
		}
	}
	checkCharts(5)
	screenshot("experiment-5-trials.png")

	// Two more trials finish: the page shows them within 2 s of being
	// stored, without a reload.
	var marked bool
	eval(`window.__sameDocument = true`, &marked)
	write(t, dir, "release-6", "", 0o644)
	write(t, dir, "release-7", "", 0o644)
	waitFor("trials 6 and 7 stored", func() bool { return succeeded() == 7 })
	seen := until("the 7th succeeded trial on the page", `document.querySelectorAll("#trials-table tr.st-SUCCEEDED").length === 7`, 30*time.Second)
	t.Logf("trials 6 and 7 appeared %v after they were stored", seen.Round(time.Millisecond))
	if seen > 2*time.Second {
		t.Errorf("the new trials appeared %v after they were stored, want within 2 s", seen)
	}
	var same bool
	eval(`window.__sameDocument === true`, &same)
	if !same {
		t.Error("the page was reloaded to show the new trials")
	}
	checkCharts(7)
	if st := text("#exp-status"); st != "RUNNING" {
		t.Errorf("experiment status %q, want RUNNING (trial 8 waits)", st)
	}
	screenshot("experiment-7-trials.png")

	// Sort by score with a click on its header: ascending.
	click(`a[data-sort="r:score"]`)
	until("the table sorted by score", `location.search.includes("sort=r%3Ascore") && document.readyState === "complete" &&
		!!document.querySelector('a[data-sort="r:score"]') && document.querySelector('a[data-sort="r:score"]').textContent.includes("▲")`, time.Minute)
	var scores []string
	eval(`(() => { const h = Array.from(document.querySelectorAll("#trials-table thead th")).findIndex(th => th.textContent.startsWith("score"));
		return Array.from(document.querySelectorAll("#trials-table tbody tr.st-SUCCEEDED")).map(r => r.children[h].textContent); })()`, &scores)
	prev := -1.0
	for _, s := range scores {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < prev {
			t.Errorf("scores after sorting: %q", scores)
			break
		}
		prev = v
	}
	if len(scores) != 7 {
		t.Errorf("sorted table shows %d scores, want 7", len(scores))
	}
	screenshot("experiment-sorted.png")

	// Click trial 3: its detail.
	click(`#trials-table tr[data-trial="3"] a`)
	until("trial 3's page", `document.readyState === "complete" && !!document.getElementById("trial-title")`, time.Minute)
	title, results, output, history := text("#trial-title"), text("#results"), text("#output"), text("#history")
	var telemetry int
	eval(`document.querySelectorAll('figure[data-chart="telemetry"] svg .mark').length`, &telemetry)
	for _, c := range []struct{ what, text, want string }{
		{"title", title, "Trial 3"}, {"title", title, "SUCCEEDED"}, {"results", results, "score"}, {"results", results, "latency"},
		{"output", output, "trial 3: xv="}, {"history", history, "RUNNING"}, {"history", history, "SUCCEEDED"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("trial page %s %q lacks %q", c.what, c.text, c.want)
		}
	}
	if telemetry != 2 {
		t.Errorf("trial 3's telemetry chart has %d points, want 2", telemetry)
	}
	screenshot("trial-3.png")

	// bench run --ui-actions: stop trial 8 (waiting for its release file)
	// from its page; the run stores it CANCELED and goes on.
	if err := chromedp.Do(ctx, chromedp.Navigate(runUI+"/e/uiexp/t/8")); err != nil {
		t.Fatal(err)
	}
	until("trial 8's page", `document.readyState === "complete" && !!document.getElementById("trial-title")`, time.Minute)
	if st := text("#trial-status"); st != "RUNNING" {
		t.Fatalf("trial 8 is %s, want RUNNING", st)
	}
	click(`form.action button`)
	until("the stop notice", `document.readyState === "complete" && !!document.querySelector("p.notice")`, time.Minute)
	status8 := func() string {
		var st string
		db.QueryRow(`SELECT status FROM trial WHERE exp_id = 'uiexp' AND trial_id = 8`).Scan(&st)
		return st
	}
	waitFor("trial 8 canceled", func() bool { return status8() == "CANCELED" })
}
