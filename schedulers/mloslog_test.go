package schedulers

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/clilog"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// The scheduler logs mlos_bench's per-trial INFO lines, with its wording.
func TestMlosBenchLogLines(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	n := 0
	s := newSetup(t, st, Config{ExperimentID: "e1", MaxTrials: 2},
		map[string]any{"optimizer_type": "FLAML", "max_suggestions": int64(5)}, func(ctx context.Context, p environments.Params) environments.Result {
			n++
			if n == 2 {
				return environments.Result{Status: trial.FAILED, Time: time.Now().UTC()}
			}
			return score(p)
		})
	var b bytes.Buffer
	s.sched.log = slog.New(clilog.File(&b, slog.LevelInfo))
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`INFO QUEUE: Added new trial: e1:1:1:1$`,
		`INFO QUEUE: Execute trial # 1/2 :: e1:1:1:1$`,
		`INFO TrialRunner: Update trial results: e1:1:1:1 :: Status\.SUCCEEDED \{'score': 49\.0\}$`,
		`INFO QUEUE: Finished trial: e1:1:1:1 on TrialRunner\(1\)$`,
		`INFO Iteration 1 :: Register: \{ g::x\[int\]\(\(0, 20\):10\)=10 \} = Status\.SUCCEEDED score: \{'score': 49\.0\}$`,
		`INFO QUEUE: Execute trial # 2/2 :: e1:2:\d+:1$`,
		`INFO TrialRunner: Update trial results: e1:2:\d+:1 :: Status\.FAILED None$`,
		`INFO Iteration 2 :: Register: \{ g::x\[int\]\(\(0, 20\):10\)=\d+ \} = Status\.FAILED score: None$`,
	}
	lines := strings.Split(b.String(), "\n")
	i := 0
	for _, l := range lines {
		if i < len(want) && regexp.MustCompile(want[i]).MatchString(l) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("log lacks (in order) %q:\n%s", want[i], b.String())
	}
}

// "Iteration N" is mlos_bench's optimizer iteration: the number of
// suggestions made so far, the same for every repeat of a configuration.
func TestMlosBenchIterationWithRepeats(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "e1", TrialConfigRepeatCount: 3},
		map[string]any{"optimizer_type": "FLAML", "max_suggestions": int64(2)}, func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
	var b bytes.Buffer
	s.sched.log = slog.New(clilog.File(&b, slog.LevelInfo))
	if err := s.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range regexp.MustCompile(`INFO (Iteration \d+) :: Register`).FindAllStringSubmatch(b.String(), -1) {
		got = append(got, m[1])
	}
	want := []string{"Iteration 1", "Iteration 1", "Iteration 1", "Iteration 2", "Iteration 2", "Iteration 2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("register lines %v, want %v", got, want)
	}
}

// The planned count is known as soon as the scheduler exists, before Start
// (the progress bar is made from it).
func TestPlannedBeforeStart(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	s := newSetup(t, st, Config{ExperimentID: "e1", TrialConfigRepeatCount: 2},
		map[string]any{"optimizer_type": "FLAML", "max_suggestions": int64(5)}, func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
	if got := s.sched.Stats().Planned; got != 10 {
		t.Errorf("Planned before Start = %d, want 5 suggestions x 2 repeats", got)
	}
}

type resumeRecorder struct{ resumed []int }

func (r *resumeRecorder) TrialStarted(storage.Trial)                        {}
func (r *resumeRecorder) TrialFinished(storage.Trial, trial.Outcome, *Best) {}
func (r *resumeRecorder) Resumed(n int)                                     { r.resumed = append(r.resumed, n) }

// A ResumeObserver learns how many budgeted trials had finished before.
func TestResumeObserver(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	run := func(maxSugg int64) []int {
		s := newSetup(t, st, Config{ExperimentID: "e1"},
			map[string]any{"optimizer_type": "FLAML", "max_suggestions": maxSugg}, func(ctx context.Context, p environments.Params) environments.Result { return score(p) })
		rec := &resumeRecorder{}
		s.sched.o.Observer = rec
		if err := s.sched.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return rec.resumed
	}
	if got := run(2); len(got) != 1 || got[0] != 0 {
		t.Errorf("new experiment: Resumed calls %v, want [0]", got)
	}
	if got := run(5); len(got) != 1 || got[0] != 2 {
		t.Errorf("resumed experiment: Resumed calls %v, want [2]", got)
	}
}
