package ui

import "html/template"

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"inc": func(i int) int { return i + 1 },
}).Parse(`
{{define "head"}}<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · bench</title><link rel="stylesheet" href="/assets/style.css"></head>
<body><nav><a href="/">Experiments</a> <a href="/compare">Compare</a></nav><main>{{end}}
{{define "foot"}}</main></body></html>{{end}}

{{define "list"}}{{template "head" .}}
<h1>Experiments</h1>
<p class="muted">{{.Storage}}</p>
<div class="scroll"><table class="data" id="experiments">
<thead><tr><th>experiment</th><th>status</th><th>progress</th><th>ETA</th><th>best so far</th><th>start</th><th>end</th><th>runner</th></tr></thead>
<tbody>{{range .Rows}}<tr><td><a href="{{.Link}}">{{.ID}}</a>{{if .Description}}<div class="muted">{{.Description}}</div>{{end}}</td>
<td class="st {{.Status}}">{{.Status}}</td><td>{{.Progress}}</td><td>{{.ETA}}</td><td>{{.Best}}</td><td>{{.Start}}</td><td>{{.End}}</td><td>{{.Runner}}</td></tr>
{{else}}<tr><td colspan="8">No experiments in this storage yet.</td></tr>{{end}}</tbody></table></div>
{{template "foot"}}{{end}}

{{define "experiment"}}{{template "head" .}}
<h1>{{.Info.ID}}</h1>
{{if .Info.Description}}<p>{{.Info.Description}}</p>{{end}}
{{if .Stopped}}<p class="notice">Stop requested: the running bench stops it within a second or so.</p>{{end}}
<div id="live" data-changes="{{.Base}}/changes" data-live="{{.Base}}/live" data-seq="{{.Seq}}" data-version="{{.Version}}" data-poll="{{.Poll}}">{{.Live}}</div>
<script src="/assets/live.js"></script>
{{template "foot"}}{{end}}

{{define "live"}}<span id="livestate" data-seq="{{.Seq}}" data-version="{{.Version}}" hidden></span>
<section class="summary"><dl>
<dt>status</dt><dd class="st {{.Info.Status}}" id="exp-status">{{.Info.Status}}</dd>
<dt>progress</dt><dd id="progress">{{.Summary.Progress}}</dd>
<dt>ETA</dt><dd>{{.Summary.ETA}}</dd>
<dt>best so far</dt><dd id="best">{{if .Best}}<a href="{{.Base}}/t/{{.Best}}">{{.Summary.Best}}</a>{{else}}–{{end}}</dd>
<dt>start</dt><dd>{{.Summary.Start}}</dd><dt>end</dt><dd>{{.Summary.End}}</dd>
<dt>runner</dt><dd>{{.Summary.Runner}}</dd>
<dt>trials</dt><dd id="ntrials">{{.NTrials}} stored, {{.NOK}} succeeded</dd>
</dl>
{{if and .Actions .Running}}<form method="post" action="{{.Base}}/stop" class="action">{{if .NeedToken}}<input type="password" name="token" placeholder="access token" required autocomplete="off">{{end}}<button type="submit">Stop the experiment</button></form>{{end}}
</section>
{{if .Traces}}<section id="trace"><h2>Optimization trace</h2><p class="muted">Each successful trial's value by trial id, coloured by trial order (a cross: a result reused from an identical trial, not measured again); the line is the best so far.</p>
<div class="charts">{{range .Traces}}<figure class="chart-box" data-chart="trace" data-marks="{{.Marks}}">{{.SVG}}</figure>{{end}}</div></section>{{end}}
{{with .Parallel}}<section id="parallel"><h2>Parallel coordinates</h2><p class="muted">One line per successful trial across its tunables and targets.{{if $.ParallelNote}} {{$.ParallelNote}}.{{end}}</p>
<figure class="chart-box wide" data-chart="parallel" data-marks="{{.Marks}}">{{.SVG}}</figure></section>{{end}}
{{with .Importance}}<section id="importance"><h2>Parameter importance</h2><p class="muted">Method: {{$.ImportanceMethod}}.</p>
<figure class="chart-box" data-chart="importance" data-marks="{{.Marks}}">{{.SVG}}</figure></section>{{end}}
{{if .Slices}}<section id="slices"><h2>Slices</h2><p class="muted">The first target against each tunable (log axes for log-scale tunables), coloured by trial order.</p>
<div class="charts">{{range .Slices}}<figure class="chart-box small" data-chart="slice" data-marks="{{.Marks}}"><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}</div></section>{{end}}
{{with .Contour}}<section id="contour"><h2>Contour: {{.Title}}</h2>
<form method="get" action="{{$.Base}}#contour" class="inline">x <select name="cx">{{range $.ParamNames}}<option{{if eq . $.CX}} selected{{end}}>{{.}}</option>{{end}}</select>
y <select name="cy">{{range $.ParamNames}}<option{{if eq . $.CY}} selected{{end}}>{{.}}</option>{{end}}</select>
{{if $.Sort}}<input type="hidden" name="sort" value="{{$.Sort}}">{{end}}{{if $.Desc}}<input type="hidden" name="desc" value="{{$.Desc}}">{{end}}
{{if $.StatusF}}<input type="hidden" name="status" value="{{$.StatusF}}">{{end}}{{if $.Q}}<input type="hidden" name="q" value="{{$.Q}}">{{end}}
<button type="submit">Draw</button></form>
<p class="muted">{{$.ContourMethod}}.</p>
<figure class="chart-box" data-chart="contour" data-marks="{{.Marks}}">{{.SVG}}</figure></section>{{end}}
{{with .Pareto}}<section id="pareto"><h2>Pareto front</h2><p class="muted">{{$.ParetoNote}}.</p>
<div class="charts"><figure class="chart-box" data-chart="pareto" data-marks="{{.Marks}}">{{.SVG}}</figure>
<figure class="chart-box" data-chart="hypervolume">{{$.HV.SVG}}</figure></div></section>{{end}}
<section id="where"><h2>Where trials ran</h2>
<div class="scroll"><table class="data"><thead><tr><th>trial runner</th><th>engine</th><th>worker (while it holds a trial)</th><th>device slot</th><th>trials</th><th>by status</th></tr></thead>
<tbody>{{range .Where}}<tr><td>{{.Runner}}</td><td>{{.Engine}}</td><td>{{.Worker}}</td><td>{{.Device}}</td><td>{{.N}}</td><td>{{.Counts}}</td></tr>{{end}}</tbody></table></div></section>
<section id="trials"><h2>Trials</h2>
<form method="get" action="{{.Base}}#trials" class="inline filters">
<label>status <select name="status"><option value="">any</option>{{range .Statuses}}<option{{if eq . $.StatusF}} selected{{end}}>{{.}}</option>{{end}}</select></label>
<label>filter <input type="search" name="q" value="{{.Q}}" placeholder="e.g. mode=b or 17"></label>
{{if .Sort}}<input type="hidden" name="sort" value="{{.Sort}}">{{end}}{{if .Desc}}<input type="hidden" name="desc" value="{{.Desc}}">{{end}}
{{if .CXq}}<input type="hidden" name="cx" value="{{.CXq}}">{{end}}{{if .CYq}}<input type="hidden" name="cy" value="{{.CYq}}">{{end}}
<button type="submit">Filter</button> <span class="muted">{{.NRows}} trials{{if gt .Pages 1}}, page {{.Page}} of {{.Pages}}{{end}}</span></form>
<div class="scroll"><table class="data trials" id="trials-table"><thead><tr>{{range .Cols}}<th><a href="{{.Link}}" data-sort="{{.Key}}">{{.Label}}{{.Arrow}}</a></th>{{end}}<th>reused from</th></tr></thead>
<tbody>{{range .Rows}}<tr data-trial="{{.ID}}" class="st-{{.Status}}">{{range $i, $c := .Cells}}{{if eq $i 0}}<td><a href="{{$.Base}}/t/{{$c}}">{{$c}}</a></td>{{else}}<td>{{$c}}</td>{{end}}{{end}}<td>{{.Reused}}</td></tr>
{{else}}<tr><td colspan="{{len .Cols}}">No trials match.</td></tr>{{end}}</tbody></table></div>
<p class="pager">{{if .Prev}}<a href="{{.Prev}}" rel="prev">← previous</a>{{end}} {{if .Next}}<a href="{{.Next}}" rel="next">next →</a>{{end}}</p>
</section>{{end}}

{{define "trial"}}{{template "head" .}}
<p><a href="{{.Base}}">← {{.Info.ID}}</a></p>
<h1 id="trial-title">Trial {{.T.ID}} <span class="st {{.T.Status}}" id="trial-status">{{.T.Status}}</span></h1>
{{if .Stopped}}<p class="notice">Stop requested: the running bench stops the trial within a second or so.</p>{{end}}
{{if .Actions}}<form method="post" action="{{.Base}}/t/{{.T.ID}}/stop" class="action">{{if .NeedToken}}<input type="password" name="token" placeholder="access token" required autocomplete="off">{{end}}<button type="submit">Stop this trial</button></form>{{end}}
<section class="summary"><dl>
<dt>start</dt><dd>{{.Start}}</dd><dt>end</dt><dd>{{.End}}</dd><dt>duration</dt><dd>{{.Duration}}</dd>
<dt>config</dt><dd>{{.T.ConfigID}} <span class="muted">{{.T.ConfigHash}}</span></dd>
<dt>trial runner</dt><dd>{{if .T.TrialRunnerID}}{{.T.TrialRunnerID}}{{else}}–{{end}}</dd>
{{if .T.Owner}}<dt>held by</dt><dd id="owner">{{.T.Owner}} (lease until {{.Lease}})</dd>{{end}}
{{if .T.RetryOf}}<dt>retry of</dt><dd><a href="{{.Base}}/t/{{.T.RetryOf}}">trial {{.T.RetryOf}}</a></dd>{{end}}
{{with .T.ReusedFrom}}<dt>reused from</dt><dd>{{if .ExperimentID}}{{.ExperimentID}}:{{end}}{{.TrialID}} (the result was not measured again)</dd>{{end}}
{{if .T.StopRequested}}<dt>stop</dt><dd>requested</dd>{{end}}
{{if .Failure}}<dt>failure</dt><dd class="failure">{{.Failure}}</dd>{{end}}
</dl></section>
{{with .T.Job}}<section id="job"><h2>Engine job</h2><dl><dt>engine</dt><dd>{{.Engine}}</dd><dt>job</dt><dd><code>{{.Ref}}</code></dd><dt>submissions</dt><dd>{{.Submits}}</dd></dl>
{{if .Request}}<details><summary>request</summary><pre>{{.Request}}</pre></details>{{end}}</section>{{end}}
<div class="cols">
<section id="values"><h2>Tunable values</h2><table class="data kv"><tbody>{{range .Params}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</tbody></table>
{{if .Meta}}<h3>Trial parameters</h3><table class="data kv"><tbody>{{range .Meta}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</tbody></table>{{end}}</section>
<section id="results"><h2>Results</h2>{{if .Results}}<table class="data kv"><tbody>{{range .Results}}<tr><th>{{.K}}</th><td>{{.V}}</td></tr>{{end}}</tbody></table>{{else}}<p class="muted">None (yet).</p>{{end}}</section>
<section id="history"><h2>Status history</h2><table class="data"><thead><tr><th>time</th><th>status</th><th>after</th></tr></thead><tbody>{{range .History}}<tr><td>{{.Ts}}</td><td class="st {{.Status}}">{{.Status}}</td><td>{{.Since}}</td></tr>{{end}}</tbody></table></section>
</div>
<section id="telemetry"><h2>Telemetry</h2>{{if .Telemetry}}<div class="charts">{{range .Telemetry}}<figure class="chart-box small" data-chart="telemetry">{{.}}</figure>{{end}}</div>{{else}}<p class="muted">No numeric telemetry recorded.</p>{{end}}</section>
<section id="output"><h2>Captured output</h2><p class="muted">As stored (secrets known to bench were redacted when it was stored).</p>
{{range .Outputs}}<details open><summary>{{.Phase}} · {{.Env}} · <code>{{.Command}}</code> · exit {{.ExitCode}}{{if .TimedOut}} (timed out){{end}} · {{.Dur}}{{if .Truncated}} · truncated{{end}}</summary>
{{if .Stdout}}<h4>stdout</h4><pre>{{.Stdout}}</pre>{{end}}{{if .Stderr}}<h4>stderr</h4><pre>{{.Stderr}}</pre>{{end}}</details>
{{else}}<p class="muted">No output captured.</p>{{end}}</section>
{{template "foot"}}{{end}}

{{define "compare"}}{{template "head" .}}
<h1>Compare two experiments</h1>
<form method="get" action="/compare" class="inline">A (baseline) <select name="a">{{range .IDs}}<option{{if eq . $.A}} selected{{end}}>{{.}}</option>{{end}}</select>
B (current) <select name="b">{{range .IDs}}<option{{if eq . $.B}} selected{{end}}>{{.}}</option>{{end}}</select>
alpha <input name="alpha" value="{{.Alpha}}" size="5"> <button type="submit">Compare</button></form>
{{if .Error}}<p class="failure">{{.Error}}</p>{{end}}
{{if .Rows}}<p class="muted">As bench compare {{.A}} {{.B}}: {{.Method}}.</p>
<div class="scroll"><table class="data" id="compare-table"><thead><tr><th>configuration</th><th>metric</th><th>A median ± CI</th><th>B median ± CI</th><th>change</th><th>95% interval</th><th>p</th><th>verdict</th></tr></thead>
<tbody>{{range .Rows}}<tr><td>{{.Config}}</td><td>{{.Metric}}</td><td>{{.Base}}</td><td>{{.Cur}}</td><td>{{.Change}}</td><td>{{.Interval}}</td><td>{{.P}}</td><td title="{{.Reason}}">{{.Verdict}}</td></tr>{{end}}</tbody></table></div>
<details><summary>as text</summary><pre>{{.Text}}</pre></details>{{end}}
{{template "foot"}}{{end}}
`))
