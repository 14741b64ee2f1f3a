package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/ci"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		s.o.Log.Warn("ui: rendering a page failed", "page", name, "err", err)
		http.Error(w, "rendering failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

// expRow is a line of the experiments page.
type expRow struct {
	ID, Description, Status, Runner string
	Done, Planned, Total, Running   int
	Progress, ETA, Best, Start, End string
	Link                            string
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var rows []expRow
	var ids []string
	if s.o.Experiment != "" {
		ids = []string{s.o.Experiment}
	} else {
		sums, err := s.st.Experiments(ctx)
		if err != nil {
			s.fail(w, err)
			return
		}
		sort.Slice(sums, func(a, b int) bool { return sums[a].TsStart.After(sums[b].TsStart) })
		for _, e := range sums {
			ids = append(ids, e.ID)
		}
	}
	for _, id := range ids {
		c, err := s.experiment(ctx, id)
		if err != nil {
			s.fail(w, err)
			return
		}
		trials, info, _ := c.snapshot()
		rows = append(rows, s.summarize(info, trials))
	}
	s.render(w, "list", map[string]any{"Title": "Experiments", "Rows": rows, "Storage": s.st.Describe(), "Single": s.o.Experiment != ""})
}

// summarize is an experiment's line: its status, progress and ETA, best
// so far, times and runner kind.
func (s *Server) summarize(info storage.ExperimentInfo, trials []storage.Trial) expRow {
	return s.summarizeModel(info, trials, newModel(info, trials, s.o.LogX))
}

// summarizeModel is summarize with the experiment's model already built.
func (s *Server) summarizeModel(info storage.ExperimentInfo, trials []storage.Trial, m *model) expRow {
	row := expRow{ID: info.ID, Description: info.Description, Status: info.Status.String(), Total: len(trials),
		Link: "/e/" + url.PathEscape(info.ID), Start: fmtTime(info.TsStart), End: fmtTime(info.TsEnd)}
	var ends []time.Time
	for _, t := range trials {
		if t.Finished() {
			row.Done++
			ends = append(ends, t.TsEnd)
		} else if t.Status == trial.RUNNING {
			row.Running++
		}
	}
	if s.o.Planned != nil {
		row.Planned = s.o.Planned(info.ID)
	}
	if row.Planned == 0 {
		row.Planned = storage.Planned(info.Notes)
	}
	row.Progress = strconv.Itoa(row.Done) + " done"
	if row.Planned > 0 {
		row.Progress = fmt.Sprintf("%d / %d", row.Done, row.Planned)
	}
	if row.Running > 0 {
		row.Progress += fmt.Sprintf(", %d running", row.Running)
	}
	row.ETA = "–"
	if info.Status == trial.RUNNING && row.Planned > row.Done && len(ends) >= 2 {
		sort.Slice(ends, func(a, b int) bool { return ends[a].Before(ends[b]) })
		k := min(20, len(ends)-1)
		per := ends[len(ends)-1].Sub(ends[len(ends)-1-k]) / time.Duration(k)
		eta := per * time.Duration(row.Planned-row.Done)
		row.ETA = fmt.Sprintf("%s (at %s per trial, the last %d)", eta.Round(time.Second), per.Round(100*time.Millisecond), k)
	} else if info.Status == trial.RUNNING && row.Planned == 0 {
		row.ETA = "unknown (no budget recorded)"
	}
	if bt, ok := m.best(); ok && len(m.objs) > 0 {
		v, _ := m.value(bt, 0)
		row.Best = fmt.Sprintf("%s = %s (trial %d)", m.objs[0].Name, num(v), bt.ID)
	}
	row.Runner = s.runnerKind(info.ID, trials)
	return row
}

// runnerKind says what ran the trials: what the running bench says, else
// what the stored trials show (engine jobs, several owners, local).
func (s *Server) runnerKind(id string, trials []storage.Trial) string {
	if s.o.RunnerKind != nil {
		if k := s.o.RunnerKind(id); k != "" {
			return k
		}
	}
	engines := map[string]bool{}
	owners := map[string]bool{}
	for _, t := range trials {
		if t.Job != nil {
			engines[t.Job.Engine] = true
		}
		if t.Owner != "" {
			owners[t.Owner] = true
		}
	}
	if len(engines) > 0 {
		return "engine: " + strings.Join(sortedKeys(engines), ", ")
	}
	if len(owners) > 1 {
		return fmt.Sprintf("%d processes (workers)", len(owners))
	}
	return "local"
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func (s *Server) handleExperiment(w http.ResponseWriter, r *http.Request) {
	c, err := s.experiment(r.Context(), r.PathValue("exp"))
	if err != nil {
		s.fail(w, err)
		return
	}
	frag, seq, version, err := s.live(r.Context(), c, r.URL.Query())
	if err != nil {
		s.fail(w, err)
		return
	}
	_, info, _ := c.snapshot()
	s.render(w, "experiment", map[string]any{
		"Title": info.ID, "Info": info, "Live": template.HTML(frag), "Seq": seq, "Version": version,
		"Poll": s.o.Poll.Milliseconds(), "Base": "/e/" + url.PathEscape(info.ID), "Stopped": r.URL.Query().Get("stopped") != "",
	})
}

// handleLive is the live part of an experiment's page alone, which the
// page's script fetches when the change feed says something changed.
func (s *Server) handleLive(w http.ResponseWriter, r *http.Request) {
	c, err := s.experiment(r.Context(), r.PathValue("exp"))
	if err != nil {
		s.fail(w, err)
		return
	}
	frag, _, _, err := s.live(r.Context(), c, r.URL.Query())
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(frag)
}

// live renders the live part of an experiment's page (cached until the
// next change).
func (s *Server) live(ctx context.Context, c *expCache, q url.Values) ([]byte, int64, int64, error) {
	trials, info, version := c.snapshot()
	c.mu.Lock()
	seq := c.seq
	key := strconv.FormatInt(version, 10) + "?" + q.Encode()
	if c.fragKey == key {
		f := c.frag
		c.mu.Unlock()
		return f, seq, version, nil
	}
	c.mu.Unlock()
	data := s.experimentData(info, trials, q)
	data["Seq"], data["Version"] = seq, version
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, "live", data); err != nil {
		return nil, 0, 0, err
	}
	c.mu.Lock()
	if c.version == version {
		c.fragKey, c.frag = key, b.Bytes()
	}
	c.mu.Unlock()
	return b.Bytes(), seq, version, nil
}

type chart struct {
	Title string
	SVG   template.HTML
	Marks int
}

type col struct {
	Key, Label, Link, Arrow string
}

type tableRow struct {
	ID     int
	Link   string
	Status string
	Cells  []string
	Reused string
}

type whereRow struct {
	Runner, Engine, Worker, Device string
	Counts                         string
	N                              int
}

const pageSize = 100

func (s *Server) experimentData(info storage.ExperimentInfo, trials []storage.Trial, q url.Values) map[string]any {
	m := newModel(info, trials, s.o.LogX)
	base := "/e/" + url.PathEscape(info.ID)
	d := map[string]any{"Info": info, "Summary": s.summarizeModel(info, trials, m), "Base": base,
		"Actions": s.o.Actions, "NeedToken": s.o.Token != "", "Running": info.Status == trial.RUNNING,
		"NOK": len(m.ok), "NTrials": len(trials)}
	var traces []chart
	for i, o := range m.objs {
		if len(m.ok) == 0 {
			break
		}
		traces = append(traces, chart{Title: o.Name, SVG: m.traceChart(i), Marks: len(m.ok)})
	}
	d["Traces"] = traces
	if len(m.ok) > 0 && len(m.objs) > 0 {
		svg, n := m.parallelChart()
		d["Parallel"] = chart{SVG: svg, Marks: n}
		if n < len(m.ok) {
			d["ParallelNote"] = fmt.Sprintf("%d of %d trials drawn: the best quarter and an even sample of the rest", n, len(m.ok))
		}
		imp := m.importance(0)
		d["Importance"] = chart{SVG: m.importanceChart(imp), Marks: len(imp)}
		d["ImportanceMethod"] = importanceMethod
		var slices []chart
		for _, p := range m.params {
			svg, n := m.sliceChart(p, 0)
			title := p.name
			if p.log {
				title += " (log axis)"
			}
			slices = append(slices, chart{Title: title, SVG: svg, Marks: n})
		}
		d["Slices"] = slices
		// The contour's pair: chosen, else the two most important.
		if len(m.params) >= 2 {
			byName := map[string]param{}
			for _, p := range m.params {
				byName[p.name] = p
			}
			cx, cy := q.Get("cx"), q.Get("cy")
			if _, ok := byName[cx]; !ok {
				cx = imp[0].name
			}
			if _, ok := byName[cy]; !ok || cy == cx {
				cy = imp[1].name
				if cy == cx {
					cy = imp[0].name
				}
			}
			svg, n := m.contourChart(byName[cx], byName[cy], 0)
			d["Contour"] = chart{Title: cx + " × " + cy, SVG: svg, Marks: n}
			d["ContourMethod"] = contourMethod
			var names []string
			for _, p := range m.params {
				names = append(names, p.name)
			}
			d["ParamNames"], d["CX"], d["CY"] = names, cx, cy
		}
		if len(m.objs) >= 2 {
			front, hv, nf, hvNow, ref := m.paretoCharts(0, 1)
			d["Pareto"] = chart{SVG: front, Marks: len(m.ok)}
			d["HV"] = chart{SVG: hv}
			var refs []string
			for i, o := range m.objs {
				v := ref[i]
				if o.Max {
					v = -v
				}
				refs = append(refs, o.Name+" = "+num(v))
			}
			d["ParetoNote"] = fmt.Sprintf("%d trials on the front over all %d targets; hypervolume now %s, with the reference point %s (each target's worst value plus a tenth of its range, from the trials so far)",
				nf, len(m.objs), num(hvNow), strings.Join(refs, ", "))
		}
		if bt, ok := m.best(); ok {
			d["Best"] = bt.ID
		}
	}
	d["Where"] = whereRan(trials)
	s.trialsTable(d, m, base, q)
	return d
}

// whereRan groups the trials by trial runner, engine, worker and device
// slot (the bench.device_slot and bench.gpu_id results of a succeeded
// trial; unknown for the others).
func whereRan(trials []storage.Trial) []whereRow {
	type key struct{ runner, engine, worker, device string }
	counts := map[key]map[string]int{}
	var keys []key
	for _, t := range trials {
		k := key{runner: "–", engine: "in process"}
		if t.TrialRunnerID > 0 {
			k.runner = strconv.Itoa(t.TrialRunnerID)
		}
		if t.Job != nil {
			k.engine = t.Job.Engine
		}
		if t.Owner != "" {
			k.worker = t.Owner
		}
		if v, ok := t.Results[schedulers.DeviceSlotResult]; ok {
			k.device = "slot " + fmt.Sprint(v)
			if g, ok := t.Results[schedulers.DeviceGPUResult]; ok && fmt.Sprint(g) != "" {
				k.device += ", GPU " + fmt.Sprint(g)
			}
		}
		if counts[k] == nil {
			counts[k] = map[string]int{}
			keys = append(keys, k)
		}
		counts[k][t.Status.String()]++
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].engine != keys[b].engine {
			return keys[a].engine < keys[b].engine
		}
		if keys[a].worker != keys[b].worker {
			return keys[a].worker < keys[b].worker
		}
		if keys[a].device != keys[b].device {
			return keys[a].device < keys[b].device
		}
		ra, _ := strconv.Atoi(keys[a].runner)
		rb, _ := strconv.Atoi(keys[b].runner)
		return ra < rb
	})
	var out []whereRow
	for _, k := range keys {
		var parts []string
		n := 0
		for _, st := range sortedKeysInt(counts[k]) {
			parts = append(parts, fmt.Sprintf("%s %d", st, counts[k][st]))
			n += counts[k][st]
		}
		out = append(out, whereRow{Runner: k.runner, Engine: k.engine, Worker: k.worker, Device: k.device, Counts: strings.Join(parts, ", "), N: n})
	}
	return out
}

func sortedKeysInt(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// trialsTable fills the trials table: filtered by status and text,
// sorted by a column, a page at a time; every control a link or a form.
func (s *Server) trialsTable(d map[string]any, m *model, base string, q url.Values) {
	type column struct {
		key, label string
		get        func(t storage.Trial) (string, float64, bool) // text, number, numeric
	}
	cols := []column{
		{"id", "trial", func(t storage.Trial) (string, float64, bool) { return strconv.Itoa(t.ID), float64(t.ID), true }},
		{"status", "status", func(t storage.Trial) (string, float64, bool) { return t.Status.String(), 0, false }},
		{"start", "start", func(t storage.Trial) (string, float64, bool) {
			return fmtTime(t.TsStart), float64(t.TsStart.UnixMicro()), true
		}},
		{"duration", "duration", func(t storage.Trial) (string, float64, bool) {
			if !t.Finished() {
				return "", math.Inf(1), true
			}
			dd := t.TsEnd.Sub(t.TsStart)
			return dd.Round(time.Millisecond).String(), dd.Seconds(), true
		}},
		{"runner", "runner", func(t storage.Trial) (string, float64, bool) {
			if t.TrialRunnerID == 0 {
				return "", 0, true
			}
			return strconv.Itoa(t.TrialRunnerID), float64(t.TrialRunnerID), true
		}},
	}
	for i, o := range m.objs {
		i := i
		cols = append(cols, column{"r:" + o.Name, o.Name + dirSuffix(o.Max), func(t storage.Trial) (string, float64, bool) {
			if v, ok := m.value(t, i); ok {
				return num(v), v, true
			}
			return t.Results.Text(m.objs[i].Name), math.Inf(1), true
		}})
	}
	for _, p := range m.params {
		p := p
		cols = append(cols, column{"p:" + p.name, p.name, func(t storage.Trial) (string, float64, bool) {
			v := t.Params[p.name]
			if p.numeric {
				f, _ := strconv.ParseFloat(v, 64)
				return v, f, true
			}
			return v, 0, false
		}})
	}
	// Filters.
	statusF, text := q.Get("status"), strings.TrimSpace(q.Get("q"))
	var rows []storage.Trial
	for _, t := range m.trials {
		if statusF != "" && t.Status.String() != statusF {
			continue
		}
		if text != "" && !matchText(t, text) {
			continue
		}
		rows = append(rows, t)
	}
	sortKey, desc := q.Get("sort"), q.Get("desc") == "1"
	ci := slices.IndexFunc(cols, func(c column) bool { return c.key == sortKey })
	if ci < 0 {
		sortKey, ci = "id", 0
	}
	get := cols[ci].get
	sort.SliceStable(rows, func(a, b int) bool {
		sa, na, numA := get(rows[a])
		sb, nb, _ := get(rows[b])
		less, greater := false, false
		if numA {
			less, greater = na < nb, na > nb
		} else {
			less, greater = sa < sb, sa > sb
		}
		if desc {
			return greater
		}
		return less
	})
	page, _ := strconv.Atoi(q.Get("page"))
	pages := max(1, (len(rows)+pageSize-1)/pageSize)
	page = max(1, min(page, pages))
	shown := rows[(page-1)*pageSize : min(len(rows), page*pageSize)]

	link := func(set map[string]string) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		for k, val := range set {
			if val == "" {
				v.Del(k)
			} else {
				v.Set(k, val)
			}
		}
		if e := v.Encode(); e != "" {
			return base + "?" + e + "#trials"
		}
		return base + "#trials"
	}
	var hdr []col
	for _, c := range cols {
		h := col{Key: c.key, Label: c.label}
		d := ""
		if c.key == sortKey {
			h.Arrow = " ▲"
			if desc {
				h.Arrow = " ▼"
			} else {
				d = "1"
			}
		}
		h.Link = link(map[string]string{"sort": c.key, "desc": d, "page": ""})
		hdr = append(hdr, h)
	}
	var out []tableRow
	for _, t := range shown {
		tr := tableRow{ID: t.ID, Link: base + "/t/" + strconv.Itoa(t.ID), Status: t.Status.String()}
		for _, c := range cols {
			txt, _, _ := c.get(t)
			tr.Cells = append(tr.Cells, txt)
		}
		if t.ReusedFrom != nil {
			tr.Reused = strconv.Itoa(t.ReusedFrom.TrialID)
			if t.ReusedFrom.ExperimentID != "" && t.ReusedFrom.ExperimentID != m.info.ID {
				tr.Reused = t.ReusedFrom.ExperimentID + ":" + tr.Reused
			}
		}
		out = append(out, tr)
	}
	var statuses []string
	for _, st := range []trial.Status{trial.PENDING, trial.READY, trial.RUNNING, trial.SUCCEEDED, trial.FAILED, trial.TIMED_OUT, trial.CANCELED} {
		statuses = append(statuses, st.String())
	}
	d["Cols"], d["Rows"], d["Statuses"] = hdr, out, statuses
	d["StatusF"], d["Q"], d["Sort"], d["Desc"] = statusF, text, sortKey, q.Get("desc")
	d["CXq"], d["CYq"] = q.Get("cx"), q.Get("cy")
	d["Page"], d["Pages"], d["NRows"] = page, pages, len(rows)
	if page > 1 {
		d["Prev"] = link(map[string]string{"page": strconv.Itoa(page - 1)})
	}
	if page < pages {
		d["Next"] = link(map[string]string{"page": strconv.Itoa(page + 1)})
	}
}

// matchText reports whether a trial matches a filter: every word, either
// NAME=VALUE (a tunable's or result's value) or text found in its id,
// status or values.
func matchText(t storage.Trial, text string) bool {
	for _, w := range strings.Fields(text) {
		if k, v, ok := strings.Cut(w, "="); ok {
			if t.Params[k] != v && t.Results.Text(k) != v {
				return false
			}
			continue
		}
		found := strconv.Itoa(t.ID) == w || strings.EqualFold(t.Status.String(), w)
		for k, v := range t.Params {
			if strings.Contains(k+"="+v, w) {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (s *Server) handleTrial(w http.ResponseWriter, r *http.Request) {
	c, err := s.experiment(r.Context(), r.PathValue("exp"))
	if err != nil {
		s.fail(w, err)
		return
	}
	id, err := strconv.Atoi(r.PathValue("trial"))
	if err != nil {
		http.Error(w, "bad trial id", http.StatusBadRequest)
		return
	}
	td, err := c.exp.Trial(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	info := c.exp.Info()
	type kvRow struct{ K, V string }
	kvs := func(m map[string]string) []kvRow {
		var out []kvRow
		for _, k := range sortedKeysStr(m) {
			out = append(out, kvRow{k, m[k]})
		}
		return out
	}
	var results []kvRow
	for _, k := range td.Results.Names() {
		results = append(results, kvRow{k, td.Results.Text(k)})
	}
	type outRow struct {
		trial.Output
		Stdout, Stderr, Command string
		Dur                     string
	}
	var outs []outRow
	for _, o := range td.Output {
		outs = append(outs, outRow{Output: o, Stdout: s.o.Redact(o.Stdout), Stderr: s.o.Redact(o.Stderr), Command: s.o.Redact(o.Command),
			Dur: o.Duration.Round(time.Millisecond).String()})
	}
	type histRow struct{ Ts, Status, Since string }
	var hist []histRow
	for k, h := range td.History {
		since := ""
		if k > 0 {
			since = "+" + h.Ts.Sub(td.History[k-1].Ts).Round(time.Millisecond).String()
		}
		hist = append(hist, histRow{fmtTime(h.Ts) + fmt.Sprintf(".%03d", h.Ts.Nanosecond()/1e6), h.Status.String(), since})
	}
	var tel []template.HTML
	tel = telemetryCharts(td.Telemetry)
	base := "/e/" + url.PathEscape(info.ID)
	dur := ""
	if td.Finished() {
		dur = td.TsEnd.Sub(td.TsStart).Round(time.Millisecond).String()
	}
	s.render(w, "trial", map[string]any{
		"Title": fmt.Sprintf("%s trial %d", info.ID, id), "Info": info, "T": td, "Base": base,
		"Params": kvs(td.Params), "Meta": kvs(td.Metadata), "Results": results, "Outputs": outs, "History": hist,
		"Telemetry": tel, "NTelemetry": len(td.Telemetry), "Failure": s.o.Redact(td.FailureReason),
		"Start": fmtTime(td.TsStart), "End": fmtTime(td.TsEnd), "Duration": dur,
		"Actions": s.o.Actions && !td.Finished(), "NeedToken": s.o.Token != "", "Stopped": r.URL.Query().Get("stopped") != "",
		"Lease": fmtTime(td.LeaseUntil),
	})
}

func sortedKeysStr(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// handleCompare compares two experiments as bench compare does: per
// configuration and metric, medians with their confidence intervals, the
// relative change with its bootstrap interval and the Mann–Whitney
// p-value.
func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	var ids []string
	if s.o.Experiment != "" {
		ids = []string{s.o.Experiment}
	} else {
		sums, err := s.st.Experiments(ctx)
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, e := range sums {
			ids = append(ids, e.ID)
		}
	}
	a, b := q.Get("a"), q.Get("b")
	data := map[string]any{"Title": "Compare", "IDs": ids, "A": a, "B": b}
	alpha := ci.DefaultAlpha
	if v, err := strconv.ParseFloat(q.Get("alpha"), 64); err == nil && v > 0 && v < 1 {
		alpha = v
	}
	data["Alpha"] = alpha
	if a != "" && b != "" {
		sa, errA := s.samples(ctx, a)
		sb, errB := s.samples(ctx, b)
		switch {
		case errA != nil:
			data["Error"] = errA.Error()
		case errB != nil:
			data["Error"] = errB.Error()
		default:
			rep := ci.Compare(sa, sb, nil, ci.Options{Alpha: alpha, Seed: 1})
			var text bytes.Buffer
			rep.WriteText(&text, false)
			type row struct {
				ci.Row
				Base, Cur, Change, Interval, P string
				Better                         string
			}
			var rows []row
			for _, rr := range rep.Rows {
				x := row{Row: rr, Base: sideText(rr.Base), Cur: sideText(rr.Cur), Change: "", Interval: "", P: ""}
				if rr.Change != nil {
					x.Change = ci.FormatChange(*rr.Change)
					if !rr.Significant {
						x.Change = "~"
					}
				}
				if rr.CILow != nil && rr.CIHigh != nil {
					x.Interval = "[" + ci.FormatChange(*rr.CILow) + ", " + ci.FormatChange(*rr.CIHigh) + "]"
				}
				if rr.P != nil {
					x.P = "p=" + strconv.FormatFloat(*rr.P, 'g', 3, 64)
				}
				rows = append(rows, x)
			}
			data["Rows"], data["Method"], data["Text"] = rows, rep.Method, text.String()
		}
	}
	s.render(w, "compare", data)
}

func sideText(sd ci.Side) string {
	if sd.N == 0 {
		return "–"
	}
	t := ci.FormatValue(sd.Median)
	if sd.Spread != nil {
		t += fmt.Sprintf(" ± %.0f%%", 100**sd.Spread)
	}
	return t + fmt.Sprintf(" (n=%d)", sd.N)
}

// samples reads an experiment's successful trials as compare's samples
// (from the dashboard's cache).
func (s *Server) samples(ctx context.Context, id string) (*ci.Samples, error) {
	c, err := s.experiment(ctx, id)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("experiment %q not found", id)
		}
		return nil, err
	}
	trials, _, _ := c.snapshot()
	sm := ci.FromTrials(id, trials, nil)
	if len(sm.Configs) == 0 {
		return nil, fmt.Errorf("experiment %q has no successful trial", id)
	}
	return sm, nil
}
