package schedulers

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/clock"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/trial"
)

// slowOpt is an optimizer whose Suggest, from its second call on, runs
// (blocks) until during runs.
type slowOpt struct {
	optimizers.Optimizer
	calls  atomic.Int64
	during func(ctx context.Context)
}

func (o *slowOpt) Suggest(ctx context.Context, k int) ([]optimizers.Suggestion, error) {
	if o.calls.Add(1) == 2 {
		o.during(ctx)
	}
	return o.Optimizer.Suggest(ctx, k)
}

// TestSlowSuggestKeepsLeases: an optimizer's Suggest that takes longer
// than the lease does not stop the lease renewals (they run off the
// dispatcher's goroutine): while it runs, the trial running here keeps its
// lease, another process cannot claim it, and it ends stored by this
// process on its runner. On a fake clock (clock_test.go): Suggest moves the
// clock a third of the lease at a time and waits for each renewal; with
// renewals on the dispatcher's goroutine none would come.
func TestSlowSuggestKeepsLeases(t *testing.T) {
	const lease = 30 * time.Second
	fake := clock.NewFake(time.Now())
	release := make(chan struct{})
	beats, onBeat := hookSignal()
	p := newPar(t, filepath.Join(t.TempDir(), "db.sqlite"), Config{ExperimentID: "e", Parallel: true, Lease: lease}, 2, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(3), "seed": int64(1)},
		Options{Clock: fake, Tick: time.Second, onBeat: onBeat},
		func(ctx context.Context, params environments.Params) environments.Result {
			if params["trial_id"] == int64(1) {
				// Trial 1 runs until the slow Suggest has seen what it
				// waits for.
				select {
				case <-release:
				case <-ctx.Done():
					return environments.Result{Status: trial.CANCELED}
				}
			}
			return score(params)
		})
	var checked atomic.Bool
	opt := &slowOpt{Optimizer: p.sched.opt}
	opt.during = func(ctx context.Context) {
		defer close(release)
		fake.WaitTickers(2) // the dispatcher's tick and the heartbeat's
		start := fake.Now()
		// Four renewals a third of the lease apart: Suggest runs for 4/3
		// of the lease on the clock.
		for n := 0; n < 4; n++ {
			drainHook(beats)
			fake.Advance(lease / 3)
			select {
			case <-beats:
			case <-time.After(hookSafety):
				t.Errorf("no lease renewal while Suggest ran for %v of the clock (got %d)", fake.Now().Sub(start), n)
				return
			}
		}
		other := p.exp.WithOwner("elsewhere.example:1:ffff", lease)
		got, err := other.Claim(ctx, 5)
		if err != nil {
			t.Errorf("another process's claim: %v", err)
			return
		}
		if len(got) > 0 {
			t.Errorf("another process took over trials %v while Suggest ran", got)
		}
		tr, err := p.exp.Trial(ctx, 1)
		if err != nil || tr.Finished() || tr.Owner != p.sched.o.Owner {
			t.Errorf("trial 1 while Suggest ran: owner %q finished %v err %v; want it held by %q", tr.Owner, tr.Finished(), err, p.sched.o.Owner)
		}
		if want := fake.Now().Add(lease).Truncate(time.Microsecond); !tr.LeaseUntil.Equal(want) {
			t.Errorf("trial 1's lease ends %v, want %v (renewed at the last beat)", tr.LeaseUntil, want)
		}
		checked.Store(true)
	}
	p.sched.opt = opt
	if err := p.sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !checked.Load() && !t.Failed() {
		t.Fatal("the slow Suggest never ran")
	}
	all := trials(t, p.exp)
	if len(all) != 3 {
		t.Fatalf("%d trials, want 3", len(all))
	}
	for _, tr := range all {
		if tr.Status != trial.SUCCEEDED {
			t.Errorf("trial %d: %s %q", tr.ID, tr.Status, tr.FailureReason)
		}
	}
	if st := p.sched.Stats(); st.Run != 3 || st.Succeeded != 3 {
		t.Errorf("stats %+v: want 3 trials run and succeeded here", st)
	}
}
