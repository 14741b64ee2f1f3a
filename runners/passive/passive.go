// Package passive is bench's passive trial runner (Auptimizer's
// PassiveResourceManager), for benchmarks a person runs by hand: on a
// phone, on a lab rig, by a manual procedure.
//
// For each trial the runner prints the configuration (and, when
// configured, the command to run with the values filled in: display only,
// never executed) on stderr, records the trial as a "passive" engine job,
// and waits for the result. The result comes from one of two places:
//
//   - the terminal prompt: the person types "score=1.23 latency=4",
//     "fail [reason]" or "skip [reason]" (with "17: " in front when several
//     trials wait); the runner returns that outcome and the scheduler
//     stores it;
//   - bench submit EXPERIMENT TRIAL score=1.23 from another shell, which
//     finishes the trial in storage; the runner polls the trial and returns
//     the stored outcome (the scheduler's own Finish then finds the trial
//     finished by "the far side" and keeps what is stored).
//
// While a trial waits, the person may report intermediate results
// (progress, for early stopping): "progress 3 loss=0.5" at the prompt, or
// bench submit EXPERIMENT TRIAL --step 3 loss=0.5. Both are stored with
// the trial (storage.Experiment.AddProgress), and the runner hands each
// stored report, once, to the trial's Spec.Progress as it finds it in
// storage, as an engine runner hands on its job's progress file.
//
// A bench interrupted while a trial waits leaves the trial unfinished with
// its passive job recorded: the next bench claims it again, and the
// runner (as a schedulers.Recoverer) prints it and waits again. A result
// submitted while no bench runs is simply stored.
package passive

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Engine is the engine name of a passive trial's job in storage.
const Engine = "passive"

// DefaultPoll is how often a waiting trial is looked up in storage.
const DefaultPoll = 250 * time.Millisecond

// Options configure a Desk.
type Options struct {
	// Command is the passive_command template: $name and ${name} are
	// replaced by the trial's tunable values (then its globals: trial_id,
	// experiment_id, ...), each quoted for a POSIX shell; unknown names
	// are left as they are. Display only: it is never run.
	Command string
	// In, when not nil, is read for answers typed at the prompt (a
	// terminal's stdin).
	In io.Reader
	// Out gets the trials, the prompt and the messages (stderr).
	Out io.Writer
	// Order lists tunable names in display order (others follow, sorted).
	Order []string
	// Poll is how often a waiting trial is read from storage (default
	// DefaultPoll).
	Poll   time.Duration
	Logger *slog.Logger
}

// Desk is where the passive runners of one bench process meet the person:
// it prints the trials that wait, reads the prompt and hands each answer
// to the trial it is for. Its runners share it.
type Desk struct {
	exp     storage.Experiment
	targets trial.Objectives
	o       Options

	con         *Console
	startReader sync.Once

	mu       sync.Mutex
	waiting  []*waiter // oldest first
	inClosed bool      // the prompt's input ended
}

// waiter is a trial waiting for its result.
type waiter struct {
	id       int
	command  string
	act      *services.Activity
	answer   chan trial.Outcome  // one answer, buffered
	progress chan trial.Progress // typed progress reports, for wait to store
}

// NewDesk returns a desk for the trials of exp whose answers must hold
// targets.
func NewDesk(exp storage.Experiment, targets trial.Objectives, o Options) *Desk {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Desk{exp: exp, targets: targets, o: o, con: consoleOf(o.Out)}
}

// Runners returns n runners (trial_runner_id 1..n) over the desk.
func (d *Desk) Runners(n int) []schedulers.Runner {
	out := make([]schedulers.Runner, n)
	for i := range out {
		out[i] = &Runner{id: i + 1, desk: d}
	}
	return out
}

// Prompting reports whether answers are read from a prompt.
func (d *Desk) Prompting() bool { return d.o.In != nil }

// Runner is one passive trial runner (a schedulers.Recoverer whose
// "jobs" are people).
type Runner struct {
	id   int
	desk *Desk
}

// ID is the runner's trial_runner_id.
func (r *Runner) ID() int { return r.id }

// Engine is the engine name of the jobs Recover takes.
func (r *Runner) Engine() string { return Engine }

// Run shows the trial and waits for its result.
func (r *Runner) Run(ctx context.Context, spec schedulers.Spec) trial.Outcome {
	return r.desk.wait(ctx, spec, false)
}

// Recover shows a trial an earlier bench showed and waits for its result
// again.
func (r *Runner) Recover(ctx context.Context, spec schedulers.Spec, _ schedulers.Handle) trial.Outcome {
	return r.desk.wait(ctx, spec, true)
}

// Teardown does nothing: bench set nothing up.
func (r *Runner) Teardown(context.Context) error { return nil }

// Close releases nothing.
func (r *Runner) Close() error { return nil }

// wait shows a trial and returns its outcome: an answer typed at the
// prompt, or the outcome stored by bench submit.
func (d *Desk) wait(ctx context.Context, spec schedulers.Spec, resumed bool) trial.Outcome {
	w := &waiter{id: spec.TrialID, command: d.Command(spec), act: spec.Activity, answer: make(chan trial.Outcome, 1),
		progress: make(chan trial.Progress, 16)}
	if !resumed && spec.Attach != nil {
		// Recorded before the trial is shown: a result submitted from now
		// on is this trial's, and a restarted bench shows it again.
		h := schedulers.Handle{Engine: Engine, Ref: "{}", Submits: 1}
		if w.command != "" {
			if b, err := json.Marshal(map[string]string{"command": w.command}); err == nil {
				h.Request = string(b)
			}
		}
		if err := spec.Attach(context.WithoutCancel(ctx), h); err != nil {
			if t, lerr := d.exp.Trial(context.WithoutCancel(ctx), spec.TrialID); lerr == nil && t.Finished() {
				return t.Outcome()
			}
			return trial.Outcome{Status: trial.FAILED, Ts: time.Now().UTC(),
				FailureReason: "passive runner: recording the trial as waiting for a hand-run result: " + err.Error()}
		}
	}
	d.add(w, spec, resumed)
	defer d.remove(w)

	tick := time.NewTicker(d.o.Poll)
	defer tick.Stop()
	warned := false
	fw := progressForwarder{to: spec.Progress, seen: map[progressKey]bool{}}
	for {
		t, err := d.exp.Trial(ctx, spec.TrialID)
		if err == nil {
			fw.forward(t.Telemetry)
		}
		switch {
		case err == nil && t.Finished():
			d.stored(t)
			return t.Outcome()
		case err != nil && ctx.Err() == nil && !warned:
			warned = true
			d.o.Logger.Warn("passive runner: reading the waiting trial from storage (will keep trying)", "trial", spec.TrialID, "err", err)
		}
		select {
		case <-ctx.Done():
			return d.stopped(ctx, spec)
		case out := <-w.answer:
			return out
		case p := <-w.progress:
			// Stored as bench submit --step stores it; the next look
			// (at once) hands it on.
			if err := d.exp.AddProgress(ctx, spec.TrialID, []trial.Progress{p}); err != nil && ctx.Err() == nil {
				d.printf("bench: trial %d: the progress report could not be stored: %v\n", spec.TrialID, err)
			}
		case <-tick.C:
		}
	}
}

// progressKey names a stored progress report: its time and step.
type progressKey struct {
	ts   int64 // microseconds
	step int64
}

// progressForwarder hands a waiting trial's stored progress reports to
// its Spec.Progress, each once, in the order they were measured. The
// scheduler stores what it is handed again; a report keeps its stored time,
// so the store keeps one row per time and metric.
type progressForwarder struct {
	to   func(trial.Progress)
	seen map[progressKey]bool
}

func (f *progressForwarder) forward(tel []storage.Telemetry) {
	if f.to == nil {
		return
	}
	for _, p := range storage.ProgressOf(tel) {
		k := progressKey{p.Ts.UnixMicro(), p.Step}
		if f.seen[k] {
			continue
		}
		f.seen[k] = true
		f.to(p)
	}
}

// stopped is the outcome of a trial whose wait was cancelled: by bench
// stop (CANCELED), by trial_idle_timeout (TIMED_OUT), or by an interrupt
// (not stored: the next bench shows the trial again).
func (d *Desk) stopped(ctx context.Context, spec schedulers.Spec) trial.Outcome {
	st, reason, interrupted := trial.StopCause(ctx)
	out := trial.Outcome{Status: st, Ts: time.Now().UTC(), FailureReason: reason}
	switch {
	case st == trial.TIMED_OUT:
		out.FailureReason = "no result came: " + reason
	case interrupted:
		out.FailureReason = "waiting for the result cancelled"
		d.printf("bench: trial %d is still waiting: run bench again to wait for it, or store its result with: %s\n",
			spec.TrialID, submitExample(spec.ExperimentID, spec.TrialID, d.targets))
		return out
	}
	d.printf("bench: trial %d: %s (%s); not waiting for it any more\n", spec.TrialID, strings.ToLower(out.Status.String()), out.FailureReason)
	return out
}

// Command renders the passive_command for a trial (empty without one).
func (d *Desk) Command(spec schedulers.Spec) string {
	if d.o.Command == "" {
		return ""
	}
	return configs.Substitute(d.o.Command, func(name string) (any, bool) {
		if v, ok := spec.Params[name]; ok {
			return engines.ShellQuote(v), true
		}
		if v, ok := spec.Globals[name]; ok {
			return engines.ShellQuote(configs.PyStr(v)), true
		}
		return nil, false
	})
}

// Names returns the $names a command template uses, in order, once each
// ("$$" is a literal "$", as in every other config template).
func Names(template string) []string {
	var out []string
	configs.Substitute(template, func(name string) (any, bool) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
		return nil, false
	})
	return out
}

// add registers a waiting trial and shows it.
func (d *Desk) add(w *waiter, spec schedulers.Spec, resumed bool) {
	if d.o.In != nil {
		d.startReader.Do(func() { go d.read() })
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting = append(d.waiting, w)
	var b strings.Builder
	state := "run it by hand"
	if resumed {
		state = "still waiting for its result"
	}
	title := fmt.Sprintf("── trial %d of experiment %s: %s ", spec.TrialID, spec.ExperimentID, state)
	if n := 72 - len([]rune(title)); n > 0 {
		title += strings.Repeat("─", n)
	}
	b.WriteString("\n" + title + "\n")
	names := d.order(spec.Params)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(&b, "    %-*s = %s\n", width, n, spec.Params[n])
	}
	if w.command != "" {
		fmt.Fprintf(&b, "  command (shown only, bench does not run it):\n    %s\n", w.command)
	}
	ex := example(d.targets)
	if d.o.In != nil && !d.inClosed {
		fmt.Fprintf(&b, "  result: type  %s  (more metric=value pairs allowed), or  fail [reason], or  skip [reason]\n", ex)
		if len(d.waiting) > 1 {
			fmt.Fprintf(&b, "          several trials wait: put the trial id first, e.g.  %d: %s\n", spec.TrialID, ex)
		}
		fmt.Fprintf(&b, "      or, from another shell:  %s\n", submitExample(spec.ExperimentID, spec.TrialID, d.targets))
		fmt.Fprintf(&b, "  intermediate results (optional, while it runs): type  %s\n", ProgressExample)
	} else {
		fmt.Fprintf(&b, "  result, from a shell:  %s\n", submitExample(spec.ExperimentID, spec.TrialID, d.targets))
		fmt.Fprintf(&b, "      (or --failed REASON, or --skip [REASON]; intermediate results: --step 3 loss=0.5)\n")
	}
	b.WriteString(strings.Repeat("─", 72) + "\n")
	d.setPromptLocked()
	_, _ = io.WriteString(d.con, b.String())
}

// order returns the parameter names in display order.
func (d *Desk) order(params map[string]string) []string {
	var out []string
	for _, n := range d.o.Order {
		if _, ok := params[n]; ok {
			out = append(out, n)
		}
	}
	rest := slices.Collect(maps.Keys(params))
	sort.Strings(rest)
	for _, n := range rest {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func submitExample(expID string, trialID int, targets trial.Objectives) string {
	ex := example(targets)
	return fmt.Sprintf("bench submit %s %d %s", engines.ShellQuote(expID), trialID, ex)
}

// remove unregisters a trial (done, answered or stopped).
func (d *Desk) remove(w *waiter) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removeLocked(w)
	d.setPromptLocked()
}

func (d *Desk) removeLocked(w *waiter) {
	if i := slices.Index(d.waiting, w); i >= 0 {
		d.waiting = slices.Delete(d.waiting, i, i+1)
	}
}

// stored tells that a waiting trial's result arrived through storage.
func (d *Desk) stored(t storage.TrialDetail) {
	d.mu.Lock()
	defer d.mu.Unlock()
	msg := fmt.Sprintf("bench: trial %d: result stored from outside this bench (bench submit): %s", t.ID, t.Status)
	if s := ValuesText(t.Results); s != "" {
		msg += " " + s
	}
	if t.FailureReason != "" {
		msg += " (" + t.FailureReason + ")"
	}
	for _, w := range d.waiting {
		if w.id == t.ID {
			d.removeLocked(w)
			break
		}
	}
	d.setPromptLocked()
	_, _ = io.WriteString(d.con, msg+"\n")
}

// ValuesText is results or progress values in one line, sorted by name:
// "score=1.2 tps=300".
func ValuesText(res map[string]any) string {
	keys := slices.Collect(maps.Keys(res))
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, res[k])
	}
	return strings.Join(parts, " ")
}

func (d *Desk) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.con, format, args...)
}

// setPromptLocked sets the console's prompt for the trials that wait for
// a typed answer (none: no prompt).
func (d *Desk) setPromptLocked() {
	switch {
	case d.o.In == nil || d.inClosed || len(d.waiting) == 0:
		d.con.SetPrompt("")
	case len(d.waiting) == 1:
		d.con.SetPrompt(fmt.Sprintf("result for trial %d> ", d.waiting[0].id))
	default:
		ids := make([]string, len(d.waiting))
		for i, w := range d.waiting {
			ids[i] = strconv.Itoa(w.id)
		}
		d.con.SetPrompt(fmt.Sprintf("result for trial %s (start with the trial id: %s: ...)> ", strings.Join(ids, ", "), ids[0]))
	}
}

// read reads typed answers until the input ends. It may outlive the runs
// (a read from a terminal cannot be interrupted); it touches nothing but
// the desk.
func (d *Desk) read() {
	sc := bufio.NewScanner(d.o.In)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		d.con.Entered()
		d.Answer(sc.Text())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inClosed = true
	d.setPromptLocked()
	if len(d.waiting) > 0 {
		fmt.Fprintf(d.con, "bench: the terminal input ended: store results with bench submit EXPERIMENT TRIAL ...\n")
	}
}

var idPrefix = regexp.MustCompile(`^#?(\d+)\s*:\s*(.*)$`)

// Answer takes one typed line: "[TRIAL:] score=1.2 …", "[TRIAL:] fail
// [reason]", "[TRIAL:] skip [reason]" or "[TRIAL:] progress STEP
// loss=0.5 …" (an intermediate result: the trial keeps waiting). An
// answer that cannot be stored is refused with a message, and the trial
// keeps waiting. It reports whether the answer was taken.
func (d *Desk) Answer(line string) bool {
	line = strings.TrimSpace(line)
	d.mu.Lock()
	defer d.mu.Unlock()
	if line == "" {
		d.con.Show()
		return false
	}
	say := func(format string, args ...any) { fmt.Fprintf(d.con, "bench: "+format+"\n", args...) }
	var w *waiter
	if m := idPrefix.FindStringSubmatch(line); m != nil {
		id, err := strconv.Atoi(m[1])
		for _, x := range d.waiting {
			if err == nil && x.id == id {
				w = x
			}
		}
		if w == nil {
			say("trial %s is not waiting for a result here (%s)", m[1], d.waitingText())
			return false
		}
		line = m[2]
	} else {
		switch len(d.waiting) {
		case 0:
			say("no trial is waiting for a result right now")
			return false
		case 1:
			w = d.waiting[0]
		default:
			say("%s: start the answer with the trial id it is for, e.g. %d: %s", d.waitingText(), d.waiting[0].id, example(d.targets))
			return false
		}
	}
	w.act.Touch()
	if p, isProgress, err := ParseProgress(line); isProgress {
		if err != nil {
			say("trial %d: %v; the trial is still waiting", w.id, err)
			return false
		}
		select {
		case w.progress <- p:
		default:
			say("trial %d: too many progress reports at once; this one was not taken", w.id)
			return false
		}
		say("trial %d: progress at step %d: %s (the trial is still waiting for its result)", w.id, p.Step, ValuesText(p.Values))
		return true
	}
	out, err := Parse(line, d.targets)
	if err != nil {
		say("trial %d: %v; the trial is still waiting", w.id, err)
		return false
	}
	cmd := w.command
	if cmd == "" {
		cmd = "(run by hand)"
	}
	out.Output = []trial.Output{{Phase: "run", Env: Engine, Command: cmd, Start: out.Ts, Stdout: "result typed at the bench prompt: " + line + "\n"}}
	d.removeLocked(w)
	d.setPromptLocked()
	w.answer <- out
	msg := fmt.Sprintf("trial %d: %s", w.id, out.Status)
	if s := ValuesText(out.Results); s != "" {
		msg += " " + s
	}
	if out.FailureReason != "" {
		msg += " (" + out.FailureReason + ")"
	}
	say("%s", msg)
	return true
}

// waitingText says which trials wait.
func (d *Desk) waitingText() string {
	switch len(d.waiting) {
	case 0:
		return "no trial is waiting"
	case 1:
		return fmt.Sprintf("trial %d is waiting", d.waiting[0].id)
	}
	ids := make([]string, len(d.waiting))
	for i, w := range d.waiting {
		ids[i] = strconv.Itoa(w.id)
	}
	return "trials " + strings.Join(ids, ", ") + " are waiting"
}
