package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/benchtune/bench/internal/clilog"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// progress shows the experiment's progress: a live bar on a terminal, one
// log line per trial otherwise.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	bar      *progressbar.ProgressBar
	useBar   bool
	targets  []optimizers.Target
	planned  int
	resumed  int // planned trials finished before this run
	done     int
	failed   int
	running  map[int]bool // trials started and not finished (this process)
	bestText string
	began    time.Time
	// stopTick ends the goroutine that redraws the bar (nil: none).
	stopTick chan struct{}
	tickDone chan struct{}
}

// redrawEvery is how often the bar is redrawn between trial events: the
// bar drops draws closer together than its throttle, so without this the
// last event (a trial's end) could stay undrawn for a whole trial, and the
// elapsed time and ETA would stand still during a long trial.
const redrawEvery = 500 * time.Millisecond

func isTerminal(w io.Writer) bool {
	if r, ok := w.(redactWriter); ok {
		return isTerminal(r.w) // the terminal behind the secret filter
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newProgress(w io.Writer, allowBar bool) *progress {
	return &progress{w: w, useBar: allowBar && isTerminal(w)}
}

func (p *progress) begin(planned int, targets []optimizers.Target) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned, p.targets, p.began = planned, targets, time.Now()
	if !p.useBar {
		return
	}
	total := int64(planned)
	if total <= 0 {
		total = -1 // unknown: a spinner
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription("trials"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionShowDescriptionAtLineEnd(),
		progressbar.OptionSetRenderBlankState(true),
	)
	p.stopTick, p.tickDone = make(chan struct{}), make(chan struct{})
	go p.redraw(p.bar, p.stopTick, p.tickDone)
}

func (p *progress) redraw(bar *progressbar.ProgressBar, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(redrawEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			_ = bar.RenderBlank()
			p.mu.Unlock()
		}
	}
}

// Resumed implements schedulers.ResumeObserver: the bar counts the
// trials left to run.
func (p *progress) Resumed(finished int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resumed = finished
	if p.bar != nil && p.planned > 0 && finished > 0 {
		p.bar.ChangeMax(max(p.planned-finished, 1))
	}
}

// PlanChanged implements schedulers.PlanObserver: a confirmation (or
// refinement) phase added trials to the plan, so done does not run past
// planned.
func (p *progress) PlanChanged(planned int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned = planned
	if p.bar != nil && planned > 0 {
		p.bar.ChangeMax(max(planned-p.resumed, 1))
	}
}

func (p *progress) describe() string {
	var b strings.Builder
	if len(p.running) > 1 {
		fmt.Fprintf(&b, "%d running ", len(p.running))
	}
	if p.failed > 0 {
		fmt.Fprintf(&b, "%d failed ", p.failed)
	}
	if p.bestText != "" {
		b.WriteString("best " + p.bestText)
	}
	return b.String()
}

// TrialStarted implements schedulers.Observer.
func (p *progress) TrialStarted(t storage.Trial) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[int]bool{}
	}
	p.running[t.ID] = true
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("trial %d %s", t.ID, p.describe()))
		return
	}
	slog.Info("trial started", "trial", t.ID, "runner", t.TrialRunnerID, paramsAttr(t.Params))
}

// paramsAttr is a trial's parameters as one key=value pair each, sorted
// by name (params.NAME=VALUE), instead of Go's map[...] syntax.
func paramsAttr(params map[string]string) slog.Attr {
	attrs := make([]slog.Attr, 0, len(params))
	for _, k := range slices.Sorted(maps.Keys(params)) {
		attrs = append(attrs, slog.String(k, params[k]))
	}
	return slog.Attr{Key: "params", Value: slog.GroupValue(attrs...)}
}

// TrialFinished implements schedulers.Observer. The best is the
// experiment's, across processes and earlier runs.
func (p *progress) TrialFinished(t storage.Trial, o trial.Outcome, best *schedulers.Best) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, t.ID)
	p.done++
	if o.Status == trial.FAILED || o.Status == trial.TIMED_OUT {
		p.failed++
	}
	if best != nil && len(best.Values) == len(p.targets) {
		parts := make([]string, len(best.Values))
		for i, v := range best.Values {
			parts[i] = fmt.Sprintf("%s=%.6g", p.targets[i].Name, v)
		}
		p.bestText = strings.Join(parts, " ") + fmt.Sprintf(" (trial %d)", best.TrialID)
	}
	var scores []float64
	if o.Status == trial.SUCCEEDED {
		if sc, err := trial.Objectives(p.targets).Scores(o.Status, o.Results); err == nil {
			scores = trial.Objectives(p.targets).Values(sc)
		}
	}
	if p.bar != nil {
		if o.FailureReason != "" && (o.Status == trial.FAILED || o.Status == trial.TIMED_OUT) {
			// The one line that says why a trial failed, above the bar.
			_ = p.bar.Clear()
			fmt.Fprintf(p.w, "%s\n", formatLine("trial finished", []any{"trial", t.ID, "status", o.Status.String(), "reason", o.FailureReason}))
		}
		p.bar.Describe(p.describe())
		_ = p.bar.Add(1)
		return
	}
	attrs := []any{"trial", t.ID, "status", o.Status.String(), "done", p.done}
	if p.planned > 0 {
		attrs = append(attrs, "planned", p.planned)
	}
	if p.resumed > 0 {
		attrs = append(attrs, "finished_before", p.resumed)
	}
	if len(scores) > 0 {
		for i, s := range scores {
			attrs = append(attrs, p.targets[i].Name, s)
		}
	}
	if o.FailureReason != "" {
		attrs = append(attrs, "reason", o.FailureReason)
	}
	if p.bestText != "" {
		attrs = append(attrs, "best", p.bestText)
	}
	elapsed := time.Since(p.began)
	attrs = append(attrs, "elapsed", elapsed.Round(time.Second).String())
	if left := p.planned - p.resumed - p.done; p.planned > 0 && p.done > 0 && left > 0 {
		eta := time.Duration(float64(elapsed) / float64(p.done) * float64(left))
		attrs = append(attrs, "eta", eta.Round(time.Second).String())
	}
	fmt.Fprintf(p.w, "%s\n", formatLine("trial finished", attrs))
}

func formatLine(msg string, attrs []any) string {
	var b strings.Builder
	b.WriteString("bench: " + msg)
	for i := 0; i+1 < len(attrs); i += 2 {
		fmt.Fprintf(&b, " %v=%v", attrs[i], clilog.Quote(fmt.Sprint(attrs[i+1])))
	}
	return b.String()
}

func (p *progress) finish() {
	if p.stopTick != nil {
		close(p.stopTick)
		<-p.tickDone
		p.stopTick = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
