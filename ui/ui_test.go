package ui

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/trial"
)

func TestHypervolume(t *testing.T) {
	for _, tc := range []struct {
		name string
		pts  [][]float64
		ref  []float64
		want float64
	}{
		{"one point", [][]float64{{1, 1}}, []float64{3, 3}, 4},
		{"staircase", [][]float64{{1, 3}, {2, 2}, {3, 1}}, []float64{4, 4}, 3 + 2 + 1},
		{"dominated point adds nothing", [][]float64{{1, 1}, {2, 2}}, []float64{3, 3}, 4},
		{"outside the reference", [][]float64{{5, 1}}, []float64{3, 3}, 0},
		{"3d box", [][]float64{{0, 0, 0}}, []float64{1, 2, 3}, 6},
		{"3d two boxes", [][]float64{{0, 1, 1}, {1, 0, 1}}, []float64{2, 2, 2}, 2*1*1 + 1*2*1 - 1*1*1},
	} {
		if got := hypervolume(tc.pts, tc.ref); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: hypervolume %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParetoFront(t *testing.T) {
	got := paretoFront([][]float64{{1, 5}, {2, 2}, {3, 3}, {5, 1}, {2, 2}})
	want := []int{0, 1, 3, 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("front %v, want %v", got, want)
	}
}

// TestImportance: the tunable that decides the target gets nearly all of
// the importance; one without effect nearly none.
func TestImportance(t *testing.T) {
	var trials []storage.Trial
	for i := 0; i < 60; i++ {
		x := i % 10
		noise := (i * 7) % 3
		trials = append(trials, storage.Trial{ID: i + 1, Status: trial.SUCCEEDED,
			Params:  map[string]string{"x": strconv.Itoa(x), "n": strconv.Itoa(noise), "c": []string{"a", "b"}[i%2]},
			Results: storage.Metrics{"y": float64(x * x)}})
	}
	m := newModel(storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "y", Direction: "min"}}}, trials, nil)
	imp := m.importance(0)
	if imp[0].name != "x" || imp[0].share < 0.9 {
		t.Errorf("importance %+v: want x first with most of it", imp)
	}
}

// fixture is an SQLite experiment with two targets, a log-scale tunable
// and a categorical one.
type fixture struct {
	st  storage.Storage
	exp storage.Experiment
	n   int
}

func newFixture(t testing.TB, path string) *fixture {
	t.Helper()
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: path})
	if err != nil {
		t.Fatal(err)
	}
	return fixtureOn(t, st)
}

// fixtureOn creates the fixture's experiment in an open storage (closed
// after the test).
func fixtureOn(t testing.TB, st storage.Storage) *fixture {
	t.Helper()
	t.Cleanup(func() { st.Close() })
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "exp-1", Description: "ui test",
		Objectives: []storage.Objective{{Name: "score", Direction: "min"}, {Name: "latency", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.SetStatus(context.Background(), trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, exp: exp}
}

func (f *fixture) params(i int) map[string]string {
	return map[string]string{"xv": strconv.Itoa(i * 37 % 101), "buf": strconv.Itoa(1 << (i * 5 % 17)), "mode": []string{"a", "b", "c"}[i%3]}
}

// add queues a trial and, with finish, finishes it SUCCEEDED.
func (f *fixture) add(t testing.TB, finish bool) int {
	t.Helper()
	f.n++
	i := f.n
	p := f.params(i)
	tr, err := f.exp.NewTrial(context.Background(), storage.TrialSpec{Params: p, TrialRunnerID: 1 + i%2, Running: true})
	if err != nil {
		t.Fatal(err)
	}
	if finish {
		f.finish(t, tr.ID)
	}
	return tr.ID
}

func (f *fixture) finish(t testing.TB, id int) {
	t.Helper()
	xv := float64(id * 37 % 101)
	err := f.exp.Finish(context.Background(), id, storage.TrialOutcome{Status: trial.SUCCEEDED,
		Results:   map[string]any{"score": (xv - 30) * (xv - 30), "latency": 1000/xv + xv},
		Telemetry: []trial.Telemetry{{Ts: time.Now().Add(-time.Second), Metric: "rss_mb", Value: 10.0}, {Ts: time.Now(), Metric: "rss_mb", Value: 12.5}},
		Output:    []trial.Output{{Phase: "run", Env: "e", Command: "./run.sh", Stdout: "hello from trial " + strconv.Itoa(id)}}})
	if err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var marksRe = regexp.MustCompile(`data-chart="(\w+)" data-marks="(\d+)"`)

// chartMarks counts, per chart of a page, the marks it says it drew and
// checks that its SVG has that many mark elements.
func chartMarks(t *testing.T, page string) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	for _, m := range marksRe.FindAllStringSubmatch(page, -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = append(out[m[1]], n)
	}
	return out
}

func TestExperimentPage(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db.sqlite"))
	for i := 0; i < 12; i++ {
		f.add(t, true)
	}
	running := f.add(t, false)
	// The budget a run recorded (schedulers notePlanned) gives the
	// progress against the plan, without the running bench's help.
	if err := f.exp.(storage.NoteAdder).AddNotes(context.Background(), storage.PlannedPrefix+"20 trials"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(f.st, Options{}))
	defer srv.Close()

	code, page := get(t, srv, "/")
	if code != 200 || !strings.Contains(page, `href="/e/exp-1"`) || !strings.Contains(page, "12 / 20, 1 running") {
		t.Fatalf("experiments page (%d):\n%s", code, page)
	}
	code, page = get(t, srv, "/e/exp-1")
	if code != 200 {
		t.Fatalf("experiment page: %d\n%s", code, page)
	}
	got := chartMarks(t, page)
	want := map[string][]int{"trace": {12, 12}, "parallel": {12}, "importance": {3}, "slice": {12, 12, 12}, "contour": {12}, "pareto": {12}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("charts and marks %v, want %v", got, want)
	}
	if n := strings.Count(page, `<circle class="mark `); n != 12*2+12*3+12+12 {
		t.Errorf("%d circles drawn, want %d", n, 12*2+12*3+12+12)
	}
	if !strings.Contains(page, "buf (log)") {
		t.Error("buf (1 to 65536) is not on a log axis")
	}
	if n := strings.Count(page, `<tr data-trial=`); n != 13 {
		t.Errorf("%d rows in the trials table, want 13", n)
	}
	if strings.Contains(page, "<script>") || !strings.Contains(page, `<script src="/assets/live.js">`) {
		t.Error("the page must load only its own script file")
	}

	// The change feed: a new trial shows in /changes and the live part.
	var seq int64
	if m := regexp.MustCompile(`data-seq="(\d+)"`).FindStringSubmatch(page); m != nil {
		seq, _ = strconv.ParseInt(m[1], 10, 64)
	}
	f.finish(t, running)
	code, body := get(t, srv, "/e/exp-1/changes?since="+strconv.FormatInt(seq, 10))
	if code != 200 || !strings.Contains(body, fmt.Sprintf(`{"trial_id":%d,"status":"SUCCEEDED"}`, running)) {
		t.Errorf("changes since %d: %d %s", seq, code, body)
	}
	_, live := get(t, srv, "/e/exp-1/live")
	if got := chartMarks(t, live)["trace"]; fmt.Sprint(got) != "[13 13]" {
		t.Errorf("after one more trial the trace has %v marks, want [13 13]", got)
	}

	// Sorting and filtering without script.
	_, sorted := get(t, srv, "/e/exp-1?sort=r:score")
	ids := regexp.MustCompile(`<tr data-trial="(\d+)"`).FindAllStringSubmatch(sorted, -1)
	var prev float64 = -1
	for _, m := range ids {
		id, _ := strconv.Atoi(m[1])
		xv := float64(id * 37 % 101)
		s := (xv - 30) * (xv - 30)
		if s < prev {
			t.Errorf("sorted by score: trial %d (%v) after %v", id, s, prev)
		}
		prev = s
	}
	_, filtered := get(t, srv, "/e/exp-1?q=mode%3Db")
	if n := strings.Count(filtered, `<tr data-trial=`); n != 5 {
		t.Errorf("filter mode=b: %d rows, want 5 (trials 1, 4, 7, 10, 13)", n)
	}

	// One trial.
	code, tp := get(t, srv, "/e/exp-1/t/3")
	for _, want := range []string{"hello from trial 3", "rss_mb", "SUCCEEDED", "RUNNING", `data-chart="telemetry"`, "./run.sh"} {
		if !strings.Contains(tp, want) {
			t.Errorf("trial page (%d) lacks %q", code, want)
		}
	}
	if code, _ := get(t, srv, "/e/nope"); code != 404 {
		t.Errorf("unknown experiment: %d, want 404", code)
	}
	if code, _ := get(t, srv, "/e/exp-1/t/999"); code != 404 {
		t.Errorf("unknown trial: %d, want 404", code)
	}
	// Compare an experiment with itself: no significant change.
	code, cp := get(t, srv, "/compare?a=exp-1&b=exp-1")
	if code != 200 || !strings.Contains(cp, `id="compare-table"`) || !strings.Contains(cp, "Mann–Whitney") {
		t.Errorf("compare page (%d):\n%.3000s", code, cp)
	}
}

func TestActions(t *testing.T) {
	f := newFixture(t, filepath.Join(t.TempDir(), "db.sqlite"))
	f.add(t, true)
	running := f.add(t, false)
	post := func(srv *httptest.Server, path string, form url.Values, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	stopPath := fmt.Sprintf("/e/exp-1/t/%d/stop", running)

	ro := httptest.NewServer(New(f.st, Options{}))
	defer ro.Close()
	if code := post(ro, stopPath, nil, nil); code != http.StatusForbidden {
		t.Errorf("read-only dashboard: stop answered %d, want 403", code)
	}
	if _, page := get(t, ro, "/e/exp-1"); strings.Contains(page, "Stop the experiment") {
		t.Error("a read-only dashboard offers to stop the experiment")
	}

	srv := httptest.NewServer(New(f.st, Options{Actions: true, Token: "s3cret", Log: quiet}))
	defer srv.Close()
	if code := post(srv, stopPath, url.Values{"token": {"wrong"}}, nil); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	for _, h := range []map[string]string{{"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site", "Origin": srv.URL}} {
		if code := post(srv, stopPath, url.Values{"token": {"s3cret"}}, h); code != http.StatusForbidden {
			t.Errorf("cross-site post %v: %d, want 403", h, code)
		}
	}
	if _, trials, _ := f.exp.StopRequests(context.Background()); len(trials) != 0 {
		t.Fatalf("refused requests asked trials %v to stop", trials)
	}
	if code := post(srv, stopPath, url.Values{"token": {"s3cret"}}, nil); code != http.StatusSeeOther {
		t.Errorf("stop with the token: %d, want 303", code)
	}
	if _, trials, _ := f.exp.StopRequests(context.Background()); fmt.Sprint(trials) != fmt.Sprint([]int{running}) {
		t.Errorf("stop requests %v, want [%d]", trials, running)
	}
	if code := post(srv, "/e/exp-1/t/1/stop", url.Values{"token": {"s3cret"}}, nil); code != http.StatusConflict {
		t.Errorf("stopping a finished trial: %d, want 409", code)
	}
	if code := post(srv, "/e/exp-1/stop", nil, map[string]string{"Authorization": "Bearer s3cret"}); code != http.StatusSeeOther {
		t.Errorf("stop the experiment with a bearer token: %d, want 303", code)
	}
	if exp, _, _ := f.exp.StopRequests(context.Background()); !exp {
		t.Error("the experiment was not asked to stop")
	}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// BenchmarkExperimentPage10k loads an experiment page of 10,000 stored
// trials from a fresh dashboard (the first load reads every trial from
// storage), then again after one more trial (read from the change feed).
func BenchmarkExperimentPage10k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "db.sqlite")
	f := newFixture(b, path)
	ctx := context.Background()
	for f.n < 10000 {
		f.n++
		tr, err := f.exp.NewTrial(ctx, storage.TrialSpec{Params: f.params(f.n), TrialRunnerID: 1})
		if err != nil {
			b.Fatal(err)
		}
		xv := float64(f.n * 37 % 101)
		if err := f.exp.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": (xv - 30) * (xv - 30), "latency": 1000/(xv+1) + xv}}); err != nil {
			b.Fatal(err)
		}
	}
	// CPU seconds per page, beside the wall time: on a shared machine the
	// wall time mostly measures the wait for a core.
	b.Run("cold", func(b *testing.B) {
		c0 := cpu()
		defer func() { b.ReportMetric((cpu()-c0).Seconds()/float64(b.N), "cpu-s/op") }()
		for i := 0; i < b.N; i++ {
			srv := httptest.NewServer(New(f.st, Options{}))
			resp, err := http.Get(srv.URL + "/e/exp-1")
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			srv.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
			b.ReportMetric(float64(n)/1e6, "MB/page")
		}
	})
	b.Run("after-one-more-trial", func(b *testing.B) {
		srv := httptest.NewServer(New(f.st, Options{}))
		defer srv.Close()
		http.Get(srv.URL + "/e/exp-1")
		var spent time.Duration
		defer func() { b.ReportMetric(spent.Seconds()/float64(b.N), "cpu-s/op") }()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			f.add(b, true)
			c0 := cpu()
			b.StartTimer()
			resp, err := http.Get(srv.URL + "/e/exp-1/live")
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			spent += cpu() - c0
		}
	})
}
