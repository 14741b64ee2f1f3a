package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
	"github.com/benchtune/bench/tunables"
)

// countRunner is a worker's runner: score = x, counting the trials it ran.
type countRunner struct {
	id  int
	mu  *sync.Mutex
	ran map[int]int
}

func (r countRunner) ID() int { return r.id }
func (r countRunner) Run(_ context.Context, s schedulers.Spec) trial.Outcome {
	r.mu.Lock()
	r.ran[s.TrialID]++
	r.mu.Unlock()
	return trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": s.Params["x"]}}
}
func (countRunner) Teardown(context.Context) error { return nil }
func (countRunner) Close() error                   { return nil }

// noLocal is the driver's local runner, which runs nothing with local
// trials off.
type noLocal struct{ t *testing.T }

func (noLocal) ID() int { return 1 }
func (r noLocal) Run(context.Context, schedulers.Spec) trial.Outcome {
	r.t.Error("a trial ran on the driver's local runner with local trials off")
	return trial.Outcome{Status: trial.FAILED}
}
func (noLocal) Teardown(context.Context) error { return nil }
func (noLocal) Close() error                   { return nil }

// driverSetup is bench run --serve --no-local-trials: a real scheduler
// whose only runners are the served workers' slots.
type driverSetup struct {
	sched *schedulers.Scheduler
	exp   storage.Experiment
	pool  *Pool
	url   string
	log   *bytes.Buffer
}

func newDriver(t *testing.T, suggestions int, lease time.Duration, adjust func(*schedulers.Config)) driverSetup {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DriverName: "sqlite", Database: filepath.Join(t.TempDir(), "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := source.Parse("t.jsonc", []byte(`{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 1000], "default": 10}}}}`))
	tun, err := tunables.ParseParams(doc.At())
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
		Config: map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(suggestions), "seed": int64(3)}, Tunables: tun.Copy()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := schedulers.Config{ExperimentID: "e", Parallel: true, DriverOnly: true, NumTrialRunners: 1, Lease: lease}
	if adjust != nil {
		adjust(&cfg)
	}
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	globals := map[string]any{"experiment_id": "e"}
	sched, err := schedulers.New(cfg, []schedulers.Runner{noLocal{t}}, opt, exp, schedulers.Options{Globals: globals, Tunables: tun,
		Tick: 20 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	pool := NewPool(lease, globals, logger)
	sched.UseRemote(pool)
	srv, err := New(exp, Config{Token: "tok", Pool: pool, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return driverSetup{sched: sched, exp: exp, pool: pool, url: hs.URL, log: &log}
}

// start runs the scheduler; the returned function waits for it and tells
// the workers the experiment is over.
func (d driverSetup) start(t *testing.T) func() error {
	done := make(chan error, 1)
	go func() { done <- d.sched.Start(context.Background()) }()
	return func() error {
		select {
		case err := <-done:
			d.pool.Close()
			return err
		case <-time.After(3 * time.Minute):
			t.Fatalf("the driver did not finish:\n%s", d.log)
			return nil
		}
	}
}

// TestServedResultsArriveViaRun: a driver that runs no trial itself and
// two network workers of two runners each run 8 trials; every outcome
// reached the dispatcher through its remote runners' Run (its own Stats
// count them, which trials it only observed in storage never are), each
// trial ran once, and the stored trial runner ids are the driver's remote
// slots.
func TestServedResultsArriveViaRun(t *testing.T) {
	const n = 8
	d := newDriver(t, n, 30*time.Second, nil)
	wait := d.start(t)
	var mu sync.Mutex
	ran := map[int]int{}
	var wg sync.WaitGroup
	stats := make([]WorkerStats, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			stats[w], err = RunWorker(context.Background(), WorkerConfig{URL: d.url, Token: "tok", Name: fmt.Sprintf("w%d", w),
				Runners: []schedulers.Runner{countRunner{1, &mu, ran}, countRunner{2, &mu, ran}}, Poll: 20 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Errorf("worker %d: %v", w, err)
			}
		}()
	}
	if err := wait(); err != nil {
		t.Fatalf("driver: %v\n%s", err, d.log)
	}
	wg.Wait()
	st := d.sched.Stats()
	if st.Run != n || st.Succeeded != n {
		t.Errorf("the driver's own stats: %+v, want %d run and succeeded here (through Run)", st, n)
	}
	if stats[0].Stored+stats[1].Stored != n {
		t.Errorf("workers: %+v", stats)
	}
	trials, err := d.exp.Trials(context.Background(), storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != n {
		t.Fatalf("%d trials stored, want %d", len(trials), n)
	}
	for _, tr := range trials {
		if tr.Status != trial.SUCCEEDED || ran[tr.ID] != 1 || tr.TrialRunnerID <= 1000 {
			t.Errorf("trial %d: %s, ran %d times, runner %d", tr.ID, tr.Status, ran[tr.ID], tr.TrialRunnerID)
		}
	}
}

// TestWorkerKilledMidTrial: a worker claims a trial and dies (no more
// heartbeats, no goodbye). Once its lease runs out, the driver-side Run
// returns FAILED naming the lost worker; the retry policy retries it as a
// new trial (max_retries 1), which another worker runs; the dead worker's
// late result is refused.
func TestWorkerKilledMidTrial(t *testing.T) {
	d := newDriver(t, 1, 2*time.Second, func(c *schedulers.Config) { c.MaxRetries = 1 })
	wait := d.start(t)
	var reg RegisterResponse
	if code := post(t, d.url+"/v1/register", "tok", RegisterRequest{Name: "doomed", Runners: 1}, &reg); code != 200 {
		t.Fatalf("register: HTTP %d", code)
	}
	var claim ClaimResponse
	deadline := time.Now().Add(time.Minute)
	for claim.Trial == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no trial offered:\n%s", d.log)
		}
		claim = ClaimResponse{}
		post(t, d.url+"/v1/claim", "tok", ClaimRequest{WorkerID: reg.WorkerID, RunnerID: 1}, &claim)
		time.Sleep(10 * time.Millisecond)
	}
	victim := claim.Trial.TrialID
	// The doomed worker is killed here. Another one comes.
	var mu sync.Mutex
	ran := map[int]int{}
	wdone := make(chan error, 1)
	go func() {
		_, err := RunWorker(context.Background(), WorkerConfig{URL: d.url, Token: "tok", Name: "steady",
			Runners: []schedulers.Runner{countRunner{1, &mu, ran}}, Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		wdone <- err
	}()
	if err := wait(); err != nil {
		t.Fatalf("driver: %v\n%s", err, d.log)
	}
	if err := <-wdone; err != nil {
		t.Fatal(err)
	}
	lost, err := d.exp.Trial(context.Background(), victim)
	if err != nil {
		t.Fatal(err)
	}
	if lost.Status != trial.FAILED || !strings.Contains(lost.FailureReason, "worker lost") || !strings.Contains(lost.FailureReason, reg.WorkerID) {
		t.Errorf("the dead worker's trial: %s %q", lost.Status, lost.FailureReason)
	}
	trials, _ := d.exp.Trials(context.Background(), storage.TrialFilter{})
	if len(trials) != 2 || trials[1].RetryOf != victim || trials[1].Status != trial.SUCCEEDED || ran[trials[1].ID] != 1 {
		t.Fatalf("trials: %+v", trials)
	}
	if st := d.sched.Stats(); st.Retried != 1 || st.Succeeded != 1 {
		t.Errorf("stats %+v", st)
	}
	good := json.RawMessage(`{"status": "SUCCEEDED", "results": {"score": 1}}`)
	if code := post(t, d.url+"/v1/result", "tok", ResultRequest{WorkerID: reg.WorkerID, TrialID: victim, Outcome: good}, nil); code != http.StatusConflict {
		t.Errorf("the dead worker's late result: HTTP %d", code)
	}
}

// blockRunner is a worker's runner whose trial runs until it is stopped;
// it reports each trial's cancellation cause, and its progress steps
// before it blocks.
type blockRunner struct {
	steps   int
	started chan int
	stopped chan error
}

func (r blockRunner) ID() int { return 1 }
func (r blockRunner) Run(ctx context.Context, s schedulers.Spec) trial.Outcome {
	for i := 1; i <= r.steps; i++ {
		s.Progress(trial.Progress{Step: int64(i), Values: map[string]any{"loss": 1 / float64(i)}})
	}
	r.started <- s.TrialID
	<-ctx.Done()
	r.stopped <- context.Cause(ctx)
	st, reason, _ := trial.StopCause(ctx)
	return trial.Outcome{Status: st, FailureReason: reason}
}
func (blockRunner) Teardown(context.Context) error { return nil }
func (blockRunner) Close() error                   { return nil }

// TestServedTrialCancelled: the driver cancels a served trial's Run: for a
// time limit, Run returns TIMED_OUT at once; for bench stop, CANCELED with
// the cause; and the worker is told to stop the trial (its runner's
// context ends) by its next heartbeat.
func TestServedTrialCancelled(t *testing.T) {
	var log bytes.Buffer
	hs, pool := newServer(t, 3*time.Second, &log)
	r := blockRunner{started: make(chan int, 1), stopped: make(chan error, 1)}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		_, _ = RunWorker(ctx, WorkerConfig{URL: hs.URL, Token: "tok-123", Runners: []schedulers.Runner{r}, Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	for i, c := range []struct {
		cause  error
		status trial.Status
		reason string
	}{
		{fmt.Errorf("the trial ran past its time limit: %w", trial.ErrTimeout), trial.TIMED_OUT, "time limit"},
		{errors.New("stopped on request (bench stop)"), trial.CANCELED, "bench stop"},
	} {
		s := serveTrial(t, pool, i+1, "1", nil)
		if id := <-r.started; id != i+1 {
			t.Fatalf("the worker runs trial %d, want %d", id, i+1)
		}
		s.cancel(c.cause)
		if out := s.outcome(t); out.Status != c.status || !strings.Contains(out.FailureReason, c.reason) {
			t.Errorf("%v: Run returned %s %q", c.cause, out.Status, out.FailureReason)
		}
		select {
		case cause := <-r.stopped:
			if !errors.Is(cause, errTakenOver) {
				t.Errorf("the worker's trial stopped with %v", cause)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the worker was not told to stop trial %d", i+1)
		}
	}
	stop()
	<-wdone
}

// TestProgressReachesDriver: what a worker's runner reports with its
// Spec.Progress reaches the driver's Spec.Progress, in step order and
// before Run returns the outcome; a driver that prunes the trial from its
// Progress (cancel with trial.ErrPruned) stops it on the worker.
func TestProgressReachesDriver(t *testing.T) {
	var log bytes.Buffer
	hs, pool := newServer(t, 3*time.Second, &log)
	var mu sync.Mutex
	var got []trial.Progress
	progress := func(p trial.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}
	stepper := stepRunner{steps: 5}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		_, _ = RunWorker(ctx, WorkerConfig{URL: hs.URL, Token: "tok-123", Runners: []schedulers.Runner{stepper}, Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	out := serveTrial(t, pool, 1, "4", progress).outcome(t)
	if out.Status != trial.SUCCEEDED {
		t.Fatalf("outcome %+v", out)
	}
	mu.Lock()
	var steps []int64
	for _, p := range got {
		steps = append(steps, p.Step)
		if p.Values["loss"] != float64(p.Step)/10 || p.Ts.IsZero() {
			t.Errorf("step %d: %+v", p.Step, p)
		}
	}
	mu.Unlock()
	if !slices.Equal(steps, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("the driver got steps %v, want 1..5 before the outcome", steps)
	}
	stop()
	<-wdone

	// Pruned from the driver's Progress: the worker's trial is stopped.
	r := blockRunner{steps: 3, started: make(chan int, 1), stopped: make(chan error, 1)}
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	w2 := make(chan struct{})
	go func() {
		defer close(w2)
		_, _ = RunWorker(ctx2, WorkerConfig{URL: hs.URL, Token: "tok-123", Runners: []schedulers.Runner{r}, Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	var pruned *served
	pruneAt := make(chan struct{})
	var once sync.Once
	pruned = serveTrial(t, pool, 2, "5", func(p trial.Progress) {
		if p.Step >= 2 {
			once.Do(func() { close(pruneAt) })
		}
	})
	select {
	case <-pruneAt:
	case <-time.After(2 * time.Minute):
		t.Fatal("the second worker's progress never reached the driver")
	}
	pruned.cancel(trial.ErrPruned)
	if out := pruned.outcome(t); out.Status != trial.CANCELED || out.FailureReason != "pruned" {
		t.Errorf("the pruned trial's Run: %s %q", out.Status, out.FailureReason)
	}
	<-r.started
	select {
	case cause := <-r.stopped:
		if !errors.Is(cause, errTakenOver) {
			t.Errorf("the worker's trial stopped with %v", cause)
		}
	case <-time.After(time.Minute):
		t.Fatal("the worker was not told to stop the pruned trial")
	}
	stop2()
	<-w2
}

// stepRunner reports steps 1..n (loss = step/10), then succeeds.
type stepRunner struct{ steps int }

func (r stepRunner) ID() int { return 1 }
func (r stepRunner) Run(_ context.Context, s schedulers.Spec) trial.Outcome {
	for i := 1; i <= r.steps; i++ {
		s.Progress(trial.Progress{Step: int64(i), Values: map[string]any{"loss": float64(i) / 10}})
	}
	return trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": s.Params["x"]}}
}
func (stepRunner) Teardown(context.Context) error { return nil }
func (stepRunner) Close() error                   { return nil }

// TestProgressToOlderServer: a server without the progress route (an
// older bench serve answers 404) still gets the trial's outcome; the
// worker says once that it stops posting progress.
func TestProgressToOlderServer(t *testing.T) {
	var log bytes.Buffer
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: filepath.Join(t.TempDir(), "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	pool := NewPool(30*time.Second, nil, slog.New(slog.NewTextHandler(&log, nil)))
	srv, err := New(exp, Config{Token: "tok-123", Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/progress" {
			writeJSON(w, http.StatusNotFound, ErrorResponse{Error: "404 page not found"})
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer old.Close()
	var wlog bytes.Buffer
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		_, _ = RunWorker(ctx, WorkerConfig{URL: old.URL, Token: "tok-123", Runners: []schedulers.Runner{stepRunner{steps: 3}},
			Poll: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&wlog, nil))})
	}()
	var got atomic.Int64
	for i := range 2 {
		out := serveTrial(t, pool, i+1, "2", func(trial.Progress) { got.Add(1) }).outcome(t)
		if out.Status != trial.SUCCEEDED {
			t.Errorf("trial %d: %+v", i+1, out)
		}
	}
	stop()
	<-wdone
	if got.Load() != 0 || strings.Count(wlog.String(), "stops posting them") != 1 {
		t.Errorf("%d reports reached the driver; worker log:\n%s", got.Load(), wlog.String())
	}
}

// TestRestartedDriverReattaches: after a driver restart, the new server's
// pool does not know the trials its workers run. A worker's heartbeat
// keeps such a trial (for a while after the start), and when the driver
// offers it again (resume) it stays with that worker instead of running
// twice; a result posted before the offer waits for it. A trial the pool
// offered and withdrew is never kept.
func TestRestartedDriverReattaches(t *testing.T) {
	var log bytes.Buffer
	hs, pool := newServer(t, 3*time.Second, &log)
	var reg, other RegisterResponse
	post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 2}, &reg)
	post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "other", Runners: 1}, &other)
	var hb HeartbeatResponse
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: reg.WorkerID, Runners: 2, Trials: []int{5, 6}}, &hb); !slices.Equal(hb.Held, []int{5, 6}) {
		t.Fatalf("the worker's trials from before the restart: held %v", hb.Held)
	}
	// Trial 5 is offered again: it stays with the worker, not with the
	// other worker's claim.
	five := serveTrial(t, pool, 5, "5", nil)
	if a, ok := pool.take(other.WorkerID); ok {
		t.Errorf("the other worker got trial %d", a.TrialID)
	}
	good := json.RawMessage(`{"status": "SUCCEEDED", "results": {"score": 5}}`)
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: reg.WorkerID, TrialID: 5, Outcome: good}, nil); code != 200 {
		t.Fatalf("the worker's result of trial 5: HTTP %d", code)
	}
	if out := five.outcome(t); out.Status != trial.SUCCEEDED {
		t.Errorf("trial 5: %+v", out)
	}
	// Trial 6's result comes before the driver offers it again: it waits.
	code := make(chan int, 1)
	go func() {
		code <- post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: reg.WorkerID, TrialID: 6, Outcome: good}, nil)
	}()
	six := serveTrial(t, pool, 6, "6", nil)
	if c := <-code; c != 200 {
		t.Fatalf("the worker's early result of trial 6: HTTP %d", c)
	}
	if out := six.outcome(t); out.Status != trial.SUCCEEDED {
		t.Errorf("trial 6: %+v", out)
	}
	// Trials this pool offered and ended are not kept.
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: reg.WorkerID, Runners: 2, Trials: []int{5, 6}}, &hb); len(hb.Held) != 0 {
		t.Errorf("finished trials still held: %v", hb.Held)
	}
}

// TestBenchStopOfServedTrial: bench stop of a trial a network worker runs
// goes through the driver's dispatcher as for a local trial: its runner's
// Run returns CANCELED with the stop's reason, which is stored, and the
// worker is told to stop the trial.
func TestBenchStopOfServedTrial(t *testing.T) {
	d := newDriver(t, 1, 3*time.Second, nil)
	wait := d.start(t)
	r := blockRunner{started: make(chan int, 1), stopped: make(chan error, 1)}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	wdone := make(chan struct{})
	go func() {
		defer close(wdone)
		_, _ = RunWorker(ctx, WorkerConfig{URL: d.url, Token: "tok", Runners: []schedulers.Runner{r}, Poll: 20 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	id := <-r.started
	if err := d.exp.RequestStop(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	select {
	case cause := <-r.stopped:
		if !errors.Is(cause, errTakenOver) {
			t.Errorf("the worker's trial stopped with %v", cause)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the worker was not told to stop the trial:\n%s", d.log)
	}
	if err := wait(); err != nil {
		t.Fatalf("driver: %v\n%s", err, d.log)
	}
	stop()
	<-wdone
	tr, err := d.exp.Trial(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Status != trial.CANCELED || !strings.Contains(tr.FailureReason, "bench stop") {
		t.Errorf("the stopped trial: %s %q", tr.Status, tr.FailureReason)
	}
	if st := d.sched.Stats(); st.Canceled != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestAbandonedClaimGoesBack: a trial taken for a claim whose worker
// already gave up (its request ended, or it said bye while the claim
// waited) goes back to the front of the queue for the next worker,
// instead of waiting for a lease to run out on a worker that never runs
// it.
func TestAbandonedClaimGoesBack(t *testing.T) {
	var log bytes.Buffer
	_, pool := newServer(t, 3*time.Second, &log)
	pool.register("w-gone", 1)
	pool.register("w-next", 1)
	serveTrial(t, pool, 7, "1", nil)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if a, ok := pool.takeWait(gone, "w-gone", time.Second); ok {
		t.Fatalf("an abandoned claim got trial %d", a.TrialID)
	}
	pool.bye("w-gone")
	if a, ok := pool.take("w-gone"); ok {
		t.Fatalf("a worker that said bye got trial %d", a.TrialID)
	}
	a, ok := pool.takeWait(context.Background(), "w-next", 10*time.Second)
	if !ok || a.TrialID != 7 {
		t.Fatalf("the next worker got %+v, %v; want trial 7", a, ok)
	}
}
