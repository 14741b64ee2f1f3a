package ci

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/benchtune/bench/internal/stats"
)

// HistoryRecord is one bench ci run in a history file (JSON Lines, one
// record a line, appended): when and where it ran, and per configuration
// and metric the current side's median and values.
type HistoryRecord struct {
	Time    time.Time      `json:"time"`
	Commit  string         `json:"commit,omitempty"`
	Branch  string         `json:"branch,omitempty"`
	Testbed string         `json:"testbed,omitempty"`
	Run     string         `json:"run,omitempty"`     // experiment id or file name
	Verdict string         `json:"verdict,omitempty"` // of the run's comparison, if any
	Points  []HistoryPoint `json:"points"`
}

// HistoryPoint is one metric of one configuration in a run.
type HistoryPoint struct {
	Config string    `json:"config"`
	Metric string    `json:"metric"`
	Median float64   `json:"median"`
	N      int       `json:"n"`
	Values []float64 `json:"values,omitempty"`
}

// NewHistoryRecord makes the record of samples s: every metric of every
// configuration (metrics restricted to only, when it is not empty).
func NewHistoryRecord(s *Samples, only []Rule) HistoryRecord {
	rec := HistoryRecord{Run: s.Name}
	want := map[string]bool{}
	for _, r := range only {
		want[r.Metric] = true
	}
	for _, c := range s.Configs {
		for _, m := range sortedKeys(c.Values) {
			if len(want) > 0 && !want[m] {
				continue
			}
			v := c.Values[m]
			if len(v) == 0 {
				continue
			}
			rec.Points = append(rec.Points, HistoryPoint{Config: c.Label, Metric: m, Median: stats.Median(v), N: len(v), Values: v})
		}
	}
	return rec
}

// AppendHistory appends rec to the history file at path (created when
// missing).
func AppendHistory(path string, rec HistoryRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHistory reads a history file; a missing file is an empty history.
// Errors name the file and line.
func ReadHistory(path string) ([]HistoryRecord, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var recs []HistoryRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for line := 1; sc.Scan(); line++ {
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 {
			continue
		}
		var r HistoryRecord
		if err := json.Unmarshal(t, &r); err != nil {
			return nil, fmt.Errorf("%s:%d: not a bench ci history record: %w", path, line, err)
		}
		recs = append(recs, r)
	}
	return recs, sc.Err()
}

// HistoryFilter selects the runs of a series.
type HistoryFilter struct {
	Config, Testbed, Branch string // "" matches any
}

func (f HistoryFilter) match(r HistoryRecord) bool {
	return (f.Testbed == "" || r.Testbed == f.Testbed) && (f.Branch == "" || r.Branch == f.Branch)
}

// SeriesPoint is one run's value of a metric.
type SeriesPoint struct {
	Record HistoryRecord `json:"-"`
	Time   time.Time     `json:"time"`
	Commit string        `json:"commit,omitempty"`
	Branch string        `json:"branch,omitempty"`
	Config string        `json:"config"`
	Median float64       `json:"median"`
	N      int           `json:"n"`
}

// Series returns the metric's medians over the matching runs, in file
// order. With no Config in the filter and several configurations, the
// first configuration seen is used; configs lists all seen.
func Series(recs []HistoryRecord, metric string, f HistoryFilter) (pts []SeriesPoint, configs []string) {
	seen := map[string]bool{}
	for _, r := range recs {
		if !f.match(r) {
			continue
		}
		for _, p := range r.Points {
			if p.Metric != metric {
				continue
			}
			if !seen[p.Config] {
				seen[p.Config] = true
				configs = append(configs, p.Config)
			}
			if f.Config == "" && p.Config != configs[0] || f.Config != "" && p.Config != f.Config {
				continue
			}
			pts = append(pts, SeriesPoint{Record: r, Time: r.Time, Commit: r.Commit, Branch: r.Branch, Config: p.Config, Median: p.Median, N: p.N})
		}
	}
	return pts, configs
}

// SeriesChange is a change point of a series: the run where a level shift
// began.
type SeriesChange struct {
	stats.ChangePoint
	Commit string    `json:"commit"`
	Time   time.Time `json:"time"`
	Change float64   `json:"change"` // (after - before) / |before|
}

// ChangePointsOf runs change-point detection (E-divisive means with a
// permutation test, stats.ChangePoints) over the series' medians.
func ChangePointsOf(pts []SeriesPoint, o stats.ChangePointOptions) []SeriesChange {
	xs := make([]float64, len(pts))
	for i, p := range pts {
		xs[i] = p.Median
	}
	var out []SeriesChange
	for _, c := range stats.ChangePoints(xs, o) {
		ch := math0(c.Before, c.After)
		out = append(out, SeriesChange{ChangePoint: c, Commit: pts[c.Index].Commit, Time: pts[c.Index].Time, Change: ch})
	}
	return out
}

func math0(before, after float64) float64 {
	if before == 0 {
		return 0
	}
	if before < 0 {
		before = -before
	}
	return (after - before) / before
}

// HistorySamples turns the last window matching runs into a baseline:
// per configuration and metric, the medians of those runs as samples
// (so a new run can be judged against recent history). Configurations
// are keyed by their labels: compare it with ByLabel(current).
func HistorySamples(recs []HistoryRecord, f HistoryFilter, window int) *Samples {
	var sel []HistoryRecord
	for _, r := range recs {
		if f.match(r) {
			sel = append(sel, r)
		}
	}
	if window > 0 && len(sel) > window {
		sel = sel[len(sel)-window:]
	}
	b := newBuilder(fmt.Sprintf("history (last %d runs)", len(sel)))
	for _, r := range sel {
		for _, p := range r.Points {
			b.add(p.Config, p.Config, p.Metric, p.Median)
		}
	}
	return b.s
}

func sortedKeys(m map[string][]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ByLabel returns a copy of s whose configurations are keyed by their
// labels, as history records name them.
func ByLabel(s *Samples) *Samples {
	out := &Samples{Name: s.Name, Configs: make([]ConfigSamples, len(s.Configs))}
	for i, c := range s.Configs {
		c.Key = c.Label
		out.Configs[i] = c
	}
	return out
}
