package schedulers

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/clock"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// The tests in this file run the dispatcher, its heartbeat and storage's
// leases on one fake clock (Options.Clock, storage.Config.Clock): time
// moves only when a test advances it, and each step waits for the event
// it causes (a tick handled, a lease renewed), never for a wall-clock time.

// hookSafety bounds a wait for an event that a broken dispatcher never
// delivers: a failure, not a timing (no step waits for it to pass).
const hookSafety = 2 * time.Minute

// signal returns a channel and a function that sends to it without
// blocking (a test hook).
func hookSignal() (chan struct{}, func()) {
	c := make(chan struct{}, 64)
	return c, func() {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func waitHook(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(hookSafety):
		t.Fatalf("no %s", what)
	}
}

func drainHook(c chan struct{}) {
	for len(c) > 0 {
		<-c
	}
}

// A trial that runs for four leases keeps its lease: the heartbeat renews
// it every third of the lease, and another process's claims find nothing.
func TestHeartbeatRenewsLeasesOnTheClock(t *testing.T) {
	const lease = 30 * time.Second
	fake := clock.NewFake(time.Now())
	beats, onBeat := hookSignal()
	started := make(chan struct{})
	release := make(chan struct{})
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, Lease: lease}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(1)}, Options{Clock: fake, Tick: time.Second, onBeat: onBeat},
		func(ctx context.Context, params environments.Params) environments.Result {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return environments.Result{Status: trial.CANCELED}
			}
			return score(params)
		})
	errc := make(chan error, 1)
	go func() { errc <- p.sched.Start(context.Background()) }()
	<-started
	fake.WaitTickers(2) // the dispatcher's tick and the heartbeat's
	other := p.exp.WithOwner("elsewhere.example:1:ffff", lease)
	for step := 1; step <= 12; step++ {
		drainHook(beats)
		fake.Advance(lease / 3)
		waitHook(t, beats, "lease renewal")
		got, err := other.Claim(context.Background(), 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > 0 {
			t.Fatalf("after %v (%d leases) another process took over %d trials", time.Duration(step)*lease/3, step/3, len(got))
		}
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if ts := trials(t, p.exp); len(ts) != 1 || ts[0].Status != trial.SUCCEEDED {
		t.Errorf("trials: %+v", ts)
	}
}

// A trial held by a process (of another host) that died is taken over
// once its lease has run out on the clock, and not before.
func TestLeaseExpiryTakeoverOnTheClock(t *testing.T) {
	const lease = time.Minute
	fake := clock.NewFake(time.Now())
	path := filepath.Join(t.TempDir(), "db.sqlite")
	ctx := context.Background()
	st := openStoreOn(t, path, fake)
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "7"}, Metadata: map[string]string{"repeat_i": "1"}}); err != nil {
		t.Fatal(err)
	}
	dead := exp.WithOwner("otherhost.example:1:dead", lease)
	claimedAt := fake.Now()
	if got, err := dead.Claim(ctx, 1); err != nil || len(got) != 1 {
		t.Fatalf("claim: %v %v", got, err)
	}
	if err := dead.UpdateStatus(ctx, 1, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	ticks, onTick := hookSignal()
	ranAt := make(chan time.Time, 1)
	p := newPar(t, path, Config{ExperimentID: "e", Parallel: true, Lease: lease, MaxTrials: 1}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(5)}, Options{Clock: fake, Tick: time.Second, onTick: onTick},
		func(ctx context.Context, params environments.Params) environments.Result {
			ranAt <- fake.Now()
			return score(params)
		})
	errc := make(chan error, 1)
	go func() { errc <- p.sched.Start(ctx) }()
	fake.WaitTickers(2)
	var ran time.Time
	for ran.IsZero() {
		fake.Advance(10 * time.Second)
		select {
		case <-ticks:
		case ran = <-ranAt:
		case err := <-errc:
			t.Fatalf("Start returned before the trial was taken over: %v", err)
		case <-time.After(hookSafety):
			t.Fatalf("the dispatcher handled no tick at %v", fake.Now())
		}
	}
	if ran.Before(claimedAt.Add(lease)) {
		t.Errorf("the trial was taken over %v after its claim, within its lease of %v", ran.Sub(claimedAt), lease)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 1 || ts[0].Status != trial.SUCCEEDED || ts[0].TrialRunnerID != 1 {
		t.Fatalf("trials: %+v; want trial 1 taken over and run here", ts)
	}
	if st := p.sched.Stats(); st.Run != 1 || st.Succeeded != 1 {
		t.Errorf("stats %+v: want the taken-over trial run here", st)
	}
}

// A trial that prints nothing for trial_idle_timeout on the clock is
// stopped TIMED_OUT; output (a touch of its Activity) restarts the count.
// The experiment goes on.
func TestHangDetectionOnTheClock(t *testing.T) {
	const idle = time.Minute
	fake := clock.NewFake(time.Now())
	ticks, onTick := hookSignal()
	running := make(chan context.Context, 1)
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, IdleTimeout: idle}, 1, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(2)}, Options{Clock: fake, Tick: time.Second, onTick: onTick},
		func(ctx context.Context, params environments.Params) environments.Result {
			if params["trial_id"] == int64(1) {
				running <- ctx
				<-ctx.Done() // hangs
				return environments.Result{Status: trial.FAILED, Reason: "interrupted"}
			}
			return score(params)
		})
	errc := make(chan error, 1)
	go func() { errc <- p.sched.Start(context.Background()) }()
	tctx := <-running
	fake.WaitTickers(2)
	step := func(d time.Duration) {
		t.Helper()
		drainHook(ticks)
		fake.Advance(d)
		waitHook(t, ticks, "tick handled")
	}
	step(45 * time.Second)
	if tctx.Err() != nil {
		t.Fatalf("stopped after 45s of a 1m idle timeout: %v", context.Cause(tctx))
	}
	services.ActivityFrom(tctx).Touch() // output at 45s
	step(45 * time.Second)
	if tctx.Err() != nil {
		t.Fatalf("stopped 45s after its last output: %v", context.Cause(tctx))
	}
	step(16 * time.Second)
	if tctx.Err() == nil {
		t.Fatal("not stopped 61s after its last output")
	}
	if cause := context.Cause(tctx); !errors.Is(cause, trial.ErrTimeout) {
		t.Errorf("cause %v, want one wrapping trial.ErrTimeout", cause)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ts := trials(t, p.exp)
	if len(ts) != 2 || ts[0].Status != trial.TIMED_OUT || !strings.Contains(ts[0].FailureReason, "no output and no telemetry for 1m1s") {
		t.Fatalf("the hung trial is TIMED_OUT after 1m1s idle and the experiment goes on: %+v", ts)
	}
	if ts[1].Status != trial.SUCCEEDED {
		t.Errorf("trial 2: %s %q", ts[1].Status, ts[1].FailureReason)
	}
}
