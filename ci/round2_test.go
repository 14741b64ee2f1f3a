package ci

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/stats"
)

func TestGitHubAnnotationsAndPRComment(t *testing.T) {
	base := samples("base", map[string][]float64{"lat": {100, 101, 99, 100.5, 99.5}, "tp": {50, 51, 49, 50.5, 49.5}, "mem": {10, 10.1, 9.9, 10.05, 9.95}})
	cur := samples("cur", map[string][]float64{"lat": {120, 121, 119, 120.5, 119.5}, "tp": {50.2, 49.8, 50.7, 49.1, 50.1}, "mem": {8, 8.1, 7.9, 8.05, 7.95}})
	rules := []Rule{{Metric: "lat", MaxIncrease: pct(0.05)}, {Metric: "tp", MaxDecrease: pct(0)}, {Metric: "mem", MaxIncrease: pct(0.1)}}
	rep := Compare(base, cur, rules, Options{Seed: 1})
	var gh bytes.Buffer
	rep.WriteGitHubAnnotations(&gh, "bench ci")
	lines := strings.Split(strings.TrimSpace(gh.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "::error title=bench ci%3A REGRESSION lat [defaults]::lat [defaults] changed +20.00%25") ||
		!strings.HasPrefix(lines[1], "::notice ") || !strings.Contains(lines[1], "mem") {
		t.Errorf("annotations:\n%s", gh.String())
	}
	var md bytes.Buffer
	rep.WritePRComment(&md, "bench ci")
	out := md.String()
	listed, folded, _ := strings.Cut(out, "<details>")
	// lat (regression) and mem (-20%, beyond the 10% limit) are listed; tp folded.
	if !strings.Contains(listed, "`lat`") || !strings.Contains(listed, "`mem`") || strings.Contains(listed, "`tp`") ||
		!strings.Contains(folded, "`tp`") || !strings.Contains(folded, "1 other row(s)") {
		t.Errorf("PR comment:\n%s", out)
	}
	// A small significant improvement within the limit is folded.
	cur2 := samples("cur", map[string][]float64{"lat": {97, 97.5, 96.5, 97.2, 96.8}, "tp": {50.2, 49.8, 50.7, 49.1, 50.1}, "mem": {10, 10.1, 9.9, 10.05, 9.95}})
	rep = Compare(base, cur2, rules, Options{Seed: 1})
	if rep.Rows[0].Verdict != Improved || rep.Rows[0].Notable() {
		t.Errorf("a 3%% improvement with a 5%% limit: %s notable=%v", rep.Rows[0].Verdict, rep.Rows[0].Notable())
	}
	md.Reset()
	rep.WritePRComment(&md, "bench ci")
	if !strings.Contains(md.String(), "No change is both significant and beyond its threshold.") {
		t.Errorf("PR comment:\n%s", md.String())
	}
}

func TestSequentialDesign(t *testing.T) {
	s, err := NewSequential(0.05, 20)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, a := range s.Spent {
		sum += a
	}
	if len(s.Looks) != 4 || s.Looks[0] != 6 || s.Looks[3] != 20 || math.Abs(sum-0.05) > 1e-12 {
		t.Errorf("%+v (sum %v)", s, sum)
	}
	// Every look can reach significance: the smallest p at n+n is below its level.
	for i, n := range s.Looks {
		if stats.MinP(n, n) >= s.Spent[i] {
			t.Errorf("look %d (n=%d): min p %v >= %v", i, n, stats.MinP(n, n), s.Spent[i])
		}
	}
	if _, err := NewSequential(0.05, 5); err == nil {
		t.Error("cap 5 accepted")
	}
}

// The group-sequential design keeps the false-alarm rate at alpha:
// simulated A/A jobs (same distribution, skewed noise) stopped by the
// design raise a false alarm in at most alpha of them (here 2000 jobs:
// at most 5% + 1.5 percentage points of sampling error).
func TestSequentialFalseAlarmRate(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("2000 simulated jobs")
	}
	rng := rand.New(rand.NewPCG(27, 1))
	seq, _ := NewSequential(0.05, 20)
	rules := []Rule{{Metric: "wall_s", MaxIncrease: pct(0)}}
	alarms, jobs := 0, 2000
	draw := func() float64 { return math.Exp(rng.NormFloat64() * 0.1) }
	for range jobs {
		var a, b []float64
		for k, n := range seq.Looks {
			for len(a) < n {
				a, b = append(a, draw()), append(b, draw())
			}
			rep := Compare(samples("a", map[string][]float64{"wall_s": a}), samples("b", map[string][]float64{"wall_s": b}), rules,
				Options{Seed: 1, Alpha: seq.Spent[k], Resamples: 200})
			if Settled(rep) || k == len(seq.Looks)-1 {
				if rep.Verdict == Regression {
					alarms++
				}
				break
			}
		}
	}
	t.Logf("A/A jobs with a 0%% threshold: %d false alarms in %d", alarms, jobs)
	if float64(alarms)/float64(jobs) > 0.065 {
		t.Errorf("%d false alarms in %d jobs", alarms, jobs)
	}
}

func TestNoiseCheck(t *testing.T) {
	s := samples("s", map[string][]float64{"wall_s": {1, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8}, "flat": {1, 1, 1, 1}})
	rules := []Rule{{Metric: "wall_s", MaxIncrease: pct(0.05)}, {Metric: "flat", MaxIncrease: pct(0.05)}}
	nz := NoiseCheck(s, rules, 10, 0.05)
	if len(nz) != 2 || nz[0].Metric != "wall_s" || !nz[0].Warn() || nz[1].Warn() || nz[1].CV != 0 {
		t.Fatalf("%+v", nz)
	}
	// CV = 1.4826 * MAD / median = 1.4826 * 0.1 / 1; detectable (z 1.96 + 0.84) * CV * sqrt(2/10) / sqrt(3/pi).
	near := math.Abs(nz[0].CV-0.14826) < 1e-9 && math.Abs(nz[0].Detectable-(stats.NormQuantile(0.975)+stats.NormQuantile(0.8))*0.14826*math.Sqrt(0.2)/math.Sqrt(3/math.Pi)) < 1e-9
	if !near || !strings.Contains(nz[0].String(), "more than the threshold") {
		t.Errorf("%+v %s", nz[0], nz[0])
	}
}

func TestABRunnerInterleaves(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "order")
	for _, order := range []string{OrderAlternate, OrderRandomBlocks} {
		ab, err := NewABRunner(ABOptions{
			Baseline:  ABCommand{Label: "A", Command: "echo A >> " + log},
			Candidate: ABCommand{Label: "B", Command: "echo B >> " + log},
			Order:     order, Dir: dir, Seed: 5, Timeout: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := ab.RunBlocks(context.Background(), 6); err != nil {
			t.Fatal(err)
		}
		got := strings.ReplaceAll(string(must(readFile(log))), "\n", "")
		if len(got) != 12 || ab.Blocks() != 6 || len(ab.Base.Configs[0].Values["wall_s"]) != 6 || len(ab.Cur.Configs[0].Values["cpu_user_s"]) != 6 {
			t.Fatalf("%s: order %q, blocks %d", order, got, ab.Blocks())
		}
		for i := 0; i < 12; i += 2 {
			if blk := got[i : i+2]; blk != "AB" && (order == OrderAlternate || blk != "BA") {
				t.Errorf("%s: block %d is %q (%s)", order, i/2, blk, got)
			}
		}
		if order == OrderRandomBlocks && !strings.Contains(got, "BA") {
			t.Errorf("random blocks never put B first: %s", got)
		}
		removeFile(log)
	}
	ab, _ := NewABRunner(ABOptions{Baseline: ABCommand{Label: "A", Command: "true"}, Candidate: ABCommand{Label: "B", Command: "echo oops >&2; exit 3"}, Dir: dir})
	if err := ab.RunBlocks(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "oops") || !strings.Contains(err.Error(), "B (") {
		t.Errorf("failing candidate: %v", err)
	}
	if _, err := NewABRunner(ABOptions{Baseline: ABCommand{Command: "x"}, Candidate: ABCommand{Command: "y"}, Order: "zigzag"}); err == nil {
		t.Error("unknown order accepted")
	}
}

func TestHistoryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 30 {
		level := 100.0
		if i >= 18 {
			level = 110
		}
		v := []float64{level * (1 + 0.01*rng.NormFloat64()), level * (1 + 0.01*rng.NormFloat64()), level * (1 + 0.01*rng.NormFloat64())}
		rec := NewHistoryRecord(samples("run", map[string][]float64{"wall_s": v, "other": {1, 2, 3}}), []Rule{{Metric: "wall_s"}})
		rec.Commit, rec.Branch, rec.Testbed = "commit"+itoa(i), "main", "tb"
		if i%2 == 1 {
			rec.Testbed = "tb2"
		}
		if err := AppendHistory(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadHistory(path)
	if err != nil || len(recs) != 30 || len(recs[0].Points) != 1 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	pts, cfgs := Series(recs, "wall_s", HistoryFilter{})
	if len(pts) != 30 || len(cfgs) != 1 {
		t.Fatalf("series of %d points", len(pts))
	}
	cps := ChangePointsOf(pts, stats.ChangePointOptions{Seed: 1, Permutations: 199})
	if len(cps) != 1 || cps[0].Commit != "commit18" || math.Abs(cps[0].Change-0.1) > 0.03 {
		t.Errorf("change points: %+v", cps)
	}
	if pts, _ := Series(recs, "wall_s", HistoryFilter{Testbed: "tb2"}); len(pts) != 15 {
		t.Errorf("testbed filter: %d points", len(pts))
	}
	// Judged against the last 10 runs: a 10% slower run is a regression.
	hs := HistorySamples(recs, HistoryFilter{}, 10)
	if len(hs.Configs) != 1 || len(hs.Configs[0].Values["wall_s"]) != 10 {
		t.Fatalf("history samples: %+v", hs)
	}
	slow := samples("new", map[string][]float64{"wall_s": {121, 122, 120, 121.5, 120.5}})
	rep := Compare(hs, ByLabel(slow), []Rule{{Metric: "wall_s", MaxIncrease: pct(0.05)}}, Options{Seed: 1})
	if rep.Verdict != Regression {
		t.Errorf("against history: %s (%s)", rep.Verdict, rep.Rows[0].Reason)
	}
	writeFile(path, "{\"time\": 1}\n")
	if _, err := ReadHistory(path); err == nil || !strings.Contains(err.Error(), "h.jsonl:1:") {
		t.Errorf("bad history: %v", err)
	}
	if recs, err := ReadHistory(path + ".none"); err != nil || recs != nil {
		t.Errorf("missing history: %v %v", recs, err)
	}
}

// A row settled by its interval at a look whose level the test cannot
// reach passes (it is not "insufficient").
func TestSettledByIntervalPasses(t *testing.T) {
	a := []float64{1, 1.01, 0.99, 1.02, 0.98, 1, 1.01, 0.99, 1.02, 0.98}
	b := []float64{1.001, 1.011, 0.991, 1.019, 0.981, 1.002, 1.011, 0.989, 1.021, 0.982}
	rules := []Rule{{Metric: "wall_s", MaxIncrease: pct(0.05)}}
	rep := Compare(samples("A", map[string][]float64{"wall_s": a}), samples("B", map[string][]float64{"wall_s": b}), rules, Options{Seed: 1, Paired: true, Alpha: 0.0001})
	if rep.Rows[0].Verdict != Insufficient {
		t.Fatalf("at alpha 0.0001 with 10 blocks: %s", rep.Rows[0].Verdict)
	}
	// With 6 blocks the interval is not trusted.
	six := Compare(samples("A", map[string][]float64{"wall_s": a[:6]}), samples("B", map[string][]float64{"wall_s": b[:6]}), rules, Options{Seed: 1, Paired: true, Alpha: 0.001})
	if Settled(six) {
		t.Error("settled by the interval of 6 blocks")
	}
	if !Settled(rep) || rep.Rows[0].Verdict != Pass || rep.Verdict != Pass {
		t.Errorf("settled by its interval: %s / %s (%s)", rep.Rows[0].Verdict, rep.Verdict, rep.Rows[0].Reason)
	}
}
