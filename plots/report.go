package plots

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// ReportInput is what bench report puts on its page.
type ReportInput struct {
	Info    storage.ExperimentInfo
	Counts  map[trial.Status]int
	Trials  []storage.Trial
	Figures []*Figure
	// Notes say which figures were left out and why.
	Notes     []string
	Generated time.Time
	Version   string
}

type kv struct{ Key, Value string }

type reportRow struct {
	ID       int
	Status   string
	OK       bool
	Best     bool
	Duration string
	Params   []string
	Results  []string
	Reason   string
	// Reused names the trial whose result this one reused ("": measured).
	Reused string
}

type reportFigure struct {
	Name, Title string
	Src         template.URL
	Width       int
}

type reportPage struct {
	In         ReportInput
	Status     string
	Counts     []kv
	Total      int
	Objectives []kv
	Best       *reportRow
	BestHow    string // how the best was chosen, when not the best trial (answer.go)
	BestParams []kv
	BestResult []kv
	ParamCols  []string
	ResultCols []string
	Rows       []reportRow
	Figures    []reportFigure
	Notes      []string
	Generated  string
}

// WriteReport writes bench report's page: one self-contained HTML file
// with the summary, the best configuration, the trials table and the
// figures as PNG data: URIs. It loads nothing from elsewhere: no
// scripts, fonts, style sheets or images. Everything from storage is
// escaped by html/template.
func WriteReport(w io.Writer, in ReportInput) error {
	pg := reportPage{In: in, Status: in.Info.Status.String(), Notes: in.Notes}
	if !in.Generated.IsZero() {
		pg.Generated = in.Generated.UTC().Format(time.RFC3339)
	}
	statuses := make([]trial.Status, 0, len(in.Counts))
	for s := range in.Counts {
		statuses = append(statuses, s)
	}
	sort.Slice(statuses, func(i, j int) bool { return statuses[i] < statuses[j] })
	for _, s := range statuses {
		pg.Counts = append(pg.Counts, kv{s.String(), strconv.Itoa(in.Counts[s])})
		pg.Total += in.Counts[s]
	}
	objNames := map[string]bool{}
	for _, o := range in.Info.Objectives {
		pg.Objectives = append(pg.Objectives, kv{o.Name, o.Direction})
		objNames[o.Name] = true
	}
	params, results := map[string]bool{}, map[string]bool{}
	for _, t := range in.Trials {
		for k := range t.Params {
			params[k] = true
		}
		for k := range t.Results {
			if !objNames[k] {
				results[k] = true
			}
		}
	}
	pg.ParamCols = keys(params)
	for _, o := range in.Info.Objectives {
		pg.ResultCols = append(pg.ResultCols, o.Name)
	}
	pg.ResultCols = append(pg.ResultCols, keys(results)...)

	bestID, bestHow, haveBest := reportBest(in)
	pg.BestHow = bestHow

	for _, t := range byID(in.Trials) {
		r := reportRow{ID: t.ID, Status: t.Status.String(), OK: t.Status == trial.SUCCEEDED, Reason: t.FailureReason,
			Best: haveBest && t.ID == bestID}
		if rf := t.ReusedFrom; rf != nil {
			r.Reused = "trial " + strconv.Itoa(rf.TrialID)
			if rf.ExperimentID != "" && rf.ExperimentID != in.Info.ID {
				r.Reused += " of " + rf.ExperimentID
			}
		}
		if t.Finished() && !t.TsStart.IsZero() {
			r.Duration = fmt.Sprintf("%.3g s", t.TsEnd.Sub(t.TsStart).Seconds())
		}
		for _, p := range pg.ParamCols {
			r.Params = append(r.Params, t.Params[p])
		}
		for _, m := range pg.ResultCols {
			r.Results = append(r.Results, t.Results.Text(m))
		}
		pg.Rows = append(pg.Rows, r)
		if r.Best {
			row := r
			pg.Best = &row
			for _, p := range keys(mapKeys(t.Params)) {
				pg.BestParams = append(pg.BestParams, kv{p, t.Params[p]})
			}
			for _, m := range t.Results.Names() {
				pg.BestResult = append(pg.BestResult, kv{m, t.Results.Text(m)})
			}
		}
	}
	for _, f := range in.Figures {
		b, err := f.Render("png", 192)
		if err != nil {
			// The page goes on without it, saying why.
			pg.Notes = append(pg.Notes, fmt.Sprintf("%s: %v", f.Name, err))
			continue
		}
		pg.Figures = append(pg.Figures, reportFigure{
			Name: f.Name, Title: f.Title,
			// The data: URI is ours (base64 of a PNG), not from storage.
			Src:   template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b)),
			Width: int(f.w.Points() * 96 / 72),
		})
	}
	return reportTmpl.Execute(w, pg)
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mapKeys(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// breakable splits a column name after each '.' and '_' so that the
// page may break a long name (bench.env.run.max_rss_mb) there: the trials
// table wraps instead of running off the right.
func breakable(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if (s[i] == '.' || s[i] == '_') && i+1 < len(s) {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{"breakable": breakable}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>bench report: {{.In.Info.ID}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.best td { background: #fff4e0; font-weight: 600; }
tr.bad td { color: #a00; }
.trials { overflow-x: auto; }
table.trials { width: 100%; }
table.trials th, table.trials td { overflow-wrap: break-word; }
table.trials td.val { overflow-wrap: anywhere; min-width: 4ch; }
table.trials td.num { white-space: normal; }
tr.reused td { font-style: italic; }
.reused-mark { color: #555; font-size: 0.85em; white-space: nowrap; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 1em; }
figure { margin: 0; }
figure img { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
.muted { color: #777; }
</style>
</head>
<body>
<h1 id="experiment-name">{{.In.Info.ID}}</h1>
{{if .In.Info.Description}}<p>{{.In.Info.Description}}</p>{{end}}
<h2>Summary</h2>
<table class="summary">
<tr><th>Experiment</th><td>{{.In.Info.ID}}</td></tr>
<tr><th>Status</th><td>{{.Status}}</td></tr>
<tr><th>Trials</th><td>{{.Total}}{{range .Counts}} · {{.Key}} {{.Value}}{{end}}</td></tr>
<tr><th>Objectives</th><td>{{range $i, $o := .Objectives}}{{if $i}}, {{end}}{{$o.Key}} ({{$o.Value}}){{else}}<span class="muted">none</span>{{end}}</td></tr>
{{if not .In.Info.TsStart.IsZero}}<tr><th>Started</th><td>{{.In.Info.TsStart.UTC.Format "2006-01-02 15:04:05 UTC"}}</td></tr>{{end}}
{{if not .In.Info.TsEnd.IsZero}}<tr><th>Ended</th><td>{{.In.Info.TsEnd.UTC.Format "2006-01-02 15:04:05 UTC"}}</td></tr>{{end}}
{{if .In.Info.RootEnvConfig}}<tr><th>Environment</th><td>{{.In.Info.RootEnvConfig}}</td></tr>{{end}}
{{if .In.Info.GitRepo}}<tr><th>Git</th><td>{{.In.Info.GitRepo}} {{.In.Info.GitCommit}}</td></tr>{{end}}
{{range .In.Info.Notes}}<tr><th>Note</th><td>{{.}}</td></tr>{{end}}
</table>

<h2>Best configuration</h2>
{{with .Best}}<p>Trial {{.ID}}{{if .Duration}} ({{.Duration}}){{end}}</p>{{if $.BestHow}}<p>{{$.BestHow}}</p>{{end}}
<table class="best">
<tr><th colspan="2">Tunables</th></tr>
{{range $.BestParams}}<tr><td>{{.Key}}</td><td>{{.Value}}</td></tr>{{end}}
<tr><th colspan="2">Results</th></tr>
{{range $.BestResult}}<tr><td>{{.Key}}</td><td class="num">{{.Value}}</td></tr>{{end}}
</table>
{{else}}<p class="muted">No successful trial with numeric objectives yet.</p>{{end}}

<h2>Plots</h2>
<div class="plots">
{{range .Figures}}<figure id="figure-{{.Name}}">
<img class="plot" src="{{.Src}}" alt="{{.Title}}" width="{{.Width}}">
<figcaption>{{.Title}} <span class="muted">({{.Name}})</span></figcaption>
</figure>
{{else}}<p class="muted">No plots.</p>{{end}}
</div>
{{range .Notes}}<p class="muted">Left out: {{.}}</p>{{end}}

<h2>Trials</h2>
<div class="trials">
<table class="trials">
<thead><tr><th>trial</th><th>status</th><th>duration</th>{{range .ParamCols}}<th>{{range $i, $p := breakable .}}{{if $i}}<wbr>{{end}}{{$p}}{{end}}</th>{{end}}{{range .ResultCols}}<th>{{range $i, $p := breakable .}}{{if $i}}<wbr>{{end}}{{$p}}{{end}}</th>{{end}}<th>failure reason</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if .Best}} class="best"{{else if not .OK}} class="bad"{{else if .Reused}} class="reused"{{end}}><td class="num">{{.ID}}</td><td>{{.Status}}{{if .Reused}} <span class="reused-mark" title="not measured again: the result of an identical trial">↺ reused {{.Reused}}</span>{{end}}</td><td class="num">{{.Duration}}</td>{{range .Params}}<td class="val">{{.}}</td>{{end}}{{range .Results}}<td class="num">{{.}}</td>{{end}}<td class="val">{{.Reason}}</td></tr>
{{end}}</tbody>
</table>
</div>
<p class="muted">Written by bench report{{if .In.Version}} {{.In.Version}}{{end}}{{if .Generated}} at {{.Generated}}{{end}}.</p>
</body>
</html>
`))

// BestTrial returns the id of the best successful trial by the
// objectives, in order (lexicographic, as bench run reports it).
func BestTrial(objs []storage.Objective, trials []storage.Trial) (int, bool) {
	targets := storage.Targets(objs)
	if len(targets) == 0 {
		return 0, false
	}
	var cands []trial.Scored
	for _, t := range trials {
		if t.Status != trial.SUCCEEDED {
			continue
		}
		if s, err := targets.Scores(t.Status, t.Results); err == nil {
			cands = append(cands, trial.Scored{ID: t.ID, Scores: s})
		}
	}
	b, ok := trial.Best(cands)
	return b.ID, ok
}
