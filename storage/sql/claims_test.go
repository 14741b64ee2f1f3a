package sql

import (
	"context"
	dbsql "database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func mustClaim(t testing.TB, exp storage.Experiment, limit int) []storage.Trial {
	t.Helper()
	got, err := exp.Claim(context.Background(), limit)
	if err != nil {
		t.Fatalf("Claim(%d): %v", limit, err)
	}
	return got
}

// TestOwnerChecks: an owner view changes only the trials its owner holds;
// the plain experiment changes any.
func TestOwnerChecks(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		a := exp.WithOwner("host:1:a", time.Minute)
		bv := exp.WithOwner("host:2:b", time.Minute)
		ok := storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1}}
		ops := []struct {
			name string
			do   func(e storage.Experiment, id int) error
		}{
			{"UpdateStatus", func(e storage.Experiment, id int) error { return e.UpdateStatus(ctx, id, trial.RUNNING, time.Time{}) }},
			{"SetTrialRunner", func(e storage.Experiment, id int) error { return e.SetTrialRunner(ctx, id, 2) }},
			{"Finish", func(e storage.Experiment, id int) error { return e.Finish(ctx, id, ok) }},
			{"FinishAndQueue", func(e storage.Experiment, id int) error {
				_, err := e.FinishAndQueue(ctx, id, ok, storage.TrialSpec{Params: map[string]string{"next": fmt.Sprint(id)}})
				return err
			}},
		}
		callers := []struct {
			name string
			view storage.Experiment
		}{{"plain", exp}, {"owner", a}, {"other", bv}}
		holders := []struct {
			name string
			view storage.Experiment // queues the trial
			want map[string]error   // caller -> error
		}{
			{"owned by a", a, map[string]error{"plain": nil, "owner": nil, "other": storage.ErrNotOwner}},
			{"unowned", exp, map[string]error{"plain": nil, "owner": storage.ErrNotOwner, "other": storage.ErrNotOwner}},
		}
		n := 0
		for _, h := range holders {
			for _, c := range callers {
				for _, op := range ops {
					t.Run(h.name+"/"+c.name+"/"+op.name, func(t *testing.T) {
						n++
						tr, err := h.view.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"i": fmt.Sprint(n)}})
						if err != nil {
							t.Fatal(err)
						}
						before := mustDetail(t, exp, tr.ID)
						trials := count(t, s, "SELECT COUNT(*) FROM trial")
						err = op.do(c.view, tr.ID)
						want := h.want[c.name]
						if want == nil {
							if err != nil {
								t.Fatalf("%s: %v", op.name, err)
							}
							if d := mustDetail(t, exp, tr.ID); d.Finished() && (d.Owner != "" || !d.LeaseUntil.IsZero()) {
								t.Errorf("finished trial keeps owner %q until %v", d.Owner, d.LeaseUntil)
							}
							return
						}
						wantErr(t, err, want, op.name)
						holder := "has no owner"
						if before.Owner != "" {
							holder = fmt.Sprintf("owned by %q", before.Owner)
						}
						if !strings.Contains(err.Error(), holder) {
							t.Errorf("error %q does not say the trial is %s", err, holder)
						}
						if diff := cmp.Diff(before, mustDetail(t, exp, tr.ID)); diff != "" {
							t.Errorf("a refused %s changed the trial (-before +after):\n%s", op.name, diff)
						}
						if got := count(t, s, "SELECT COUNT(*) FROM trial"); got != trials {
							t.Errorf("a refused %s queued a trial", op.name)
						}
					})
				}
			}
		}

		// Trials queued through an owner view are its owner's, with a lease;
		// FinishAndQueue hands the next one to the same owner.
		start := time.Now()
		tr, err := a.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "1"}, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		d := mustDetail(t, exp, tr.ID)
		if d.Owner != "host:1:a" || d.Owner != tr.Owner || !d.LeaseUntil.Equal(tr.LeaseUntil) || d.Status != trial.RUNNING {
			t.Errorf("trial queued by the owner: returned %+v, stored %+v", tr, d.Trial)
		}
		if lo, hi := start.Add(time.Minute-time.Second), time.Now().Add(time.Minute+time.Second); d.LeaseUntil.Before(lo) || d.LeaseUntil.After(hi) {
			t.Errorf("lease until %v, want about a minute from now (%v..%v)", d.LeaseUntil, lo, hi)
		}
		next, err := a.FinishAndQueue(ctx, tr.ID, ok, storage.TrialSpec{Params: map[string]string{"x": "2"}, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		if d := mustDetail(t, exp, tr.ID); d.Owner != "" || !d.LeaseUntil.IsZero() || d.Status != trial.SUCCEEDED {
			t.Errorf("finished trial: %+v", d.Trial)
		}
		if d := mustDetail(t, exp, next.ID); d.Owner != "host:1:a" || d.LeaseUntil.IsZero() {
			t.Errorf("next trial: %+v", d.Trial)
		}

		// Finished and unknown trials give the usual errors to any owner.
		wantErr(t, bv.Finish(ctx, tr.ID, ok), storage.ErrFinished, "Finish of a finished trial by another owner")
		wantErr(t, bv.UpdateStatus(ctx, 999, trial.RUNNING, time.Time{}), storage.ErrNotFound, "UpdateStatus of an unknown trial")

		// Owner-only calls on the plain experiment, and bad leases.
		_, err = exp.Claim(ctx, 1)
		wantErr(t, err, storage.ErrInvalid, "Claim without owner")
		_, err = exp.Heartbeat(ctx)
		wantErr(t, err, storage.ErrInvalid, "Heartbeat without owner")
		wantErr(t, exp.Release(ctx), storage.ErrInvalid, "Release without owner")
		_, err = exp.WithOwner("  ", time.Minute).Claim(ctx, 1)
		wantErr(t, err, storage.ErrInvalid, "Claim with an empty owner")
		_, err = a.Claim(ctx, 0)
		wantErr(t, err, storage.ErrInvalid, "Claim(0)")
		trials := count(t, s, "SELECT COUNT(*) FROM trial")
		noLease := exp.WithOwner("x", 0)
		_, err = noLease.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "3"}})
		wantErr(t, err, storage.ErrInvalid, "NewTrial with a zero lease")
		_, err = noLease.Claim(ctx, 1)
		wantErr(t, err, storage.ErrInvalid, "Claim with a zero lease")
		if got := count(t, s, "SELECT COUNT(*) FROM trial"); got != trials {
			t.Errorf("a refused NewTrial stored a trial")
		}
	})
}

// TestClaim: claims take unfinished trials by id, each for one owner, and
// skip trials asked to stop; Heartbeat and Release act on the owner's
// trials only.
func TestClaim(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		s := open(t, cfg)
		exp := newExperiment(t, s, "e")
		other := newExperiment(t, s, "other")
		mustTrial(t, other, map[string]string{"o": "1"}) // never claimed through e
		for i := 1; i <= 7; i++ {
			if tr := mustTrial(t, exp, map[string]string{"i": fmt.Sprint(i)}); tr.ID != i {
				t.Fatalf("trial id %d, want %d", tr.ID, i)
			}
		}
		mustFinish(t, exp, 1, trial.SUCCEEDED, nil)
		if err := exp.RequestStop(ctx, 3); err != nil {
			t.Fatal(err)
		}
		// Each worker acts through a Store of its own, as another process.
		worker := func(name string) storage.Experiment {
			e, err := open(t, cfg).LoadExperiment(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			return e.WithOwner(name, time.Minute)
		}
		a, bw := worker("a"), worker("b")
		steps := []struct {
			who   storage.Experiment
			limit int
			want  []int
		}{
			{a, 2, []int{2, 4}},
			{bw, 1, []int{5}},
			{bw, 10, []int{6, 7}},
			{a, 10, []int{}},
			{bw, 1, []int{}},
		}
		for i, st := range steps {
			got := mustClaim(t, st.who, st.limit)
			if diff := cmp.Diff(st.want, ids(got)); diff != "" {
				t.Fatalf("step %d: claimed (-want +got):\n%s", i, diff)
			}
			for _, tr := range got {
				owner := map[storage.Experiment]string{a: "a", bw: "b"}[st.who]
				if tr.Owner != owner || tr.LeaseUntil.IsZero() || tr.Params["i"] != fmt.Sprint(tr.ID) || tr.Finished() {
					t.Errorf("claimed trial %+v", tr)
				}
			}
		}
		n, err := a.Heartbeat(ctx)
		if err != nil || n != 2 {
			t.Errorf("Heartbeat(a) = %d, %v; want 2", n, err)
		}
		if err := bw.Finish(ctx, 5, storage.TrialOutcome{Status: trial.SUCCEEDED}); err != nil {
			t.Fatal(err)
		}
		if n, err := bw.Heartbeat(ctx); err != nil || n != 2 {
			t.Errorf("Heartbeat(b) = %d, %v; want 2 (trial 5 is finished)", n, err)
		}
		// Release hands a's trials back at once, and only a's.
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := a.Heartbeat(ctx); err != nil || n != 0 {
			t.Errorf("Heartbeat after Release = %d, %v; want 0", n, err)
		}
		if got := mustClaim(t, bw, 10); fmt.Sprint(ids(got)) != "[2 4]" {
			t.Errorf("after Release, b claimed %v, want [2 4]", ids(got))
		}
		pending, err := exp.PendingTrials(ctx)
		if err != nil {
			t.Fatal(err)
		}
		owners := map[int]string{}
		for _, tr := range pending {
			owners[tr.ID] = tr.Owner
		}
		if diff := cmp.Diff(map[int]string{2: "b", 3: "", 4: "b", 6: "b", 7: "b"}, owners); diff != "" {
			t.Errorf("owners of the pending trials (-want +got):\n%s", diff)
		}
	})
}

// TestLeaseExpiry: when an owner stops heartbeating, its trials go to
// another owner once the lease runs out; the old owner can then change
// nothing. A live owner's trials are never taken.
func TestLeaseExpiry(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		s := open(t, cfg)
		exp := newExperiment(t, s, "e")
		for i := range 3 {
			mustTrial(t, exp, map[string]string{"i": fmt.Sprint(i)})
		}
		// The other process is ready before the lease is taken, so that a
		// loaded machine does not let the short lease run out before the
		// first check.
		other, err := open(t, cfg).LoadExperiment(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		heir := other.WithOwner("heir", time.Minute)
		const lease = 400 * time.Millisecond
		lost := exp.WithOwner("lost", lease)
		claimed := time.Now()
		if got := mustClaim(t, lost, 10); len(got) != 3 {
			t.Fatalf("claimed %v", ids(got))
		}
		if err := lost.UpdateStatus(ctx, 1, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if got := mustClaim(t, heir, 10); len(got) != 0 && time.Since(claimed) < lease {
			t.Fatalf("claimed live trials %v", ids(got))
		}
		time.Sleep(lease + 100*time.Millisecond)
		got := mustClaim(t, heir, 10)
		if diff := cmp.Diff([]int{1, 2, 3}, ids(got)); diff != "" {
			t.Fatalf("claimed after the lease ran out (-want +got):\n%s", diff)
		}
		if got[0].Status != trial.RUNNING || got[0].Owner != "heir" {
			t.Errorf("taken-over trial: %+v", got[0])
		}
		before := mustDetail(t, exp, 1)
		out := storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1}, Output: []storage.Output{{Phase: "run", Stdout: "late"}}}
		err = lost.Finish(ctx, 1, out)
		wantErr(t, err, storage.ErrNotOwner, "Finish by the old owner")
		if !strings.Contains(err.Error(), `owned by "heir"`) {
			t.Errorf("error does not name the owner: %v", err)
		}
		if diff := cmp.Diff(before, mustDetail(t, exp, 1)); diff != "" {
			t.Errorf("the old owner's Finish changed the trial (-before +after):\n%s", diff)
		}
		wantErr(t, lost.UpdateStatus(ctx, 2, trial.RUNNING, time.Time{}), storage.ErrNotOwner, "UpdateStatus by the old owner")
		if n, err := lost.Heartbeat(ctx); err != nil || n != 0 {
			t.Errorf("the old owner's Heartbeat = %d, %v; want 0", n, err)
		}
		if err := lost.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := heir.Finish(ctx, 1, out); err != nil {
			t.Fatal(err)
		}
		if n, err := heir.Heartbeat(ctx); err != nil || n != 2 {
			t.Errorf("the heir's Heartbeat = %d, %v; want 2", n, err)
		}

		// A heartbeating owner with a short lease keeps its trials while
		// another process keeps trying to claim them.
		mustTrial(t, exp, map[string]string{"i": "live"})
		// The lease is short next to the time the thief tries, long next
		// to the heartbeat period, even on a loaded machine.
		live := exp.WithOwner("live", time.Second)
		if got := mustClaim(t, live, 10); len(got) != 1 {
			t.Fatalf("claimed %v", ids(got))
		}
		stop := make(chan struct{})
		beats := make(chan error, 1)
		go func() {
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					beats <- nil
					return
				case <-tick.C:
					if n, err := live.Heartbeat(ctx); err != nil || n != 1 {
						beats <- fmt.Errorf("Heartbeat = %d, %v", n, err)
						return
					}
				}
			}
		}()
		thief := other.WithOwner("thief", time.Minute)
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if got := mustClaim(t, thief, 10); len(got) != 0 {
				t.Fatalf("claimed a live owner's trials %v", ids(got))
			}
		}
		close(stop)
		if err := <-beats; err != nil {
			t.Fatal(err)
		}
	})
}

// TestConcurrentClaims: worker processes (a Store each) claim trials while
// a driver process queues them; every trial is claimed exactly once.
func TestConcurrentClaims(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		exp := newExperiment(t, open(t, cfg), "e")
		const total, workers = 150, 6
		// The driver queues a third of the trials first, the rest while
		// the workers claim.
		for i := range total / 3 {
			mustTrial(t, exp, map[string]string{"i": fmt.Sprint(i)})
		}
		var queued atomic.Bool
		errs := make(chan error, workers+1)
		go func() {
			defer queued.Store(true)
			for i := total / 3; i < total; i++ {
				if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"i": fmt.Sprint(i)}}); err != nil {
					errs <- err
					return
				}
			}
		}()
		var (
			mu     sync.Mutex
			claims = map[int][]string{}
			wg     sync.WaitGroup
		)
		for w := range workers {
			store := open(t, cfg)
			wexp, err := store.LoadExperiment(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("worker-%d", w)
			view := wexp.WithOwner(name, time.Minute)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					last := queued.Load() // read before claiming: nothing comes after
					got, err := view.Claim(ctx, 1+w%3)
					if err != nil {
						errs <- fmt.Errorf("%s: %w", name, err)
						return
					}
					if len(got) == 0 {
						if last {
							return
						}
						time.Sleep(time.Millisecond)
						continue
					}
					for _, tr := range got {
						mu.Lock()
						claims[tr.ID] = append(claims[tr.ID], name)
						mu.Unlock()
						if tr.Owner != name {
							errs <- fmt.Errorf("%s claimed trial %d owned by %q", name, tr.ID, tr.Owner)
							return
						}
						if err := view.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"worker": name}}); err != nil {
							errs <- fmt.Errorf("%s: %w", name, err)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(claims) != total {
			t.Errorf("%d trials claimed, want %d", len(claims), total)
		}
		perWorker := map[string]int{}
		for id, who := range claims {
			if len(who) != 1 {
				t.Errorf("trial %d claimed by %v", id, who)
			}
			perWorker[who[0]]++
		}
		all, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range all {
			if tr.Status != trial.SUCCEEDED || tr.Owner != "" || tr.Results.Text("worker") != claims[tr.ID][0] {
				t.Errorf("trial %d: status %s owner %q results %v, claimed by %v", tr.ID, tr.Status, tr.Owner, tr.Results, claims[tr.ID])
			}
		}
		counts, err := exp.Counts(ctx)
		if err != nil || counts[trial.SUCCEEDED] != total || len(counts) != 1 {
			t.Errorf("Counts = %v, %v", counts, err)
		}
		t.Logf("trials per worker: %v", perWorker)
	})
}

// TestSQLiteWriteLocksAtBegin: an SQLite write transaction holds the
// database's write lock from its first statement (BEGIN IMMEDIATE), which
// Claim relies on: another connection cannot start writing meanwhile.
func TestSQLiteWriteLocksAtBegin(t *testing.T) {
	cfg := sqliteBackend.fresh(t)
	s := open(t, cfg)
	ctx := context.Background()
	other, err := dbsql.Open("sqlite", "file:"+uriPath(cfg.Database)+"?"+url.Values{"_pragma": {"busy_timeout(0)"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "BEGIN IMMEDIATE; ROLLBACK"); err != nil {
		t.Fatalf("BEGIN IMMEDIATE outside a write: %v", err)
	}
	err = s.write(ctx, func(r runner) error {
		// Nothing written yet: a deferred BEGIN would hold no lock here.
		_, err := other.ExecContext(ctx, "BEGIN IMMEDIATE; ROLLBACK")
		if !isBusy(err) {
			return fmt.Errorf("another connection began writing during a write transaction: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStopRequests: any process may ask a trial or the experiment to stop.
func TestStopRequests(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		s := open(t, cfg)
		exp := newExperiment(t, s, "e")
		other := newExperiment(t, s, "other")
		for i := 1; i <= 4; i++ {
			mustTrial(t, exp, map[string]string{"i": fmt.Sprint(i)})
		}
		mustTrial(t, other, map[string]string{"i": "1"})
		mustFinish(t, exp, 1, trial.SUCCEEDED, nil)
		owner := exp.WithOwner("w", time.Minute)
		if got := mustClaim(t, owner, 1); fmt.Sprint(ids(got)) != "[2]" {
			t.Fatalf("claimed %v", ids(got))
		}
		// `bench stop` runs in another process.
		stopper, err := open(t, cfg).LoadExperiment(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			trial int
			want  error
		}{
			{2, nil}, // owned and running: its owner will see it
			{3, nil},
			{3, nil}, // again: the first request is kept
			{0, nil}, // the experiment
			{1, storage.ErrFinished},
			{99, storage.ErrNotFound},
			{-1, storage.ErrInvalid},
		}
		for _, tc := range tests {
			err := stopper.RequestStop(ctx, tc.trial)
			if tc.want == nil && err != nil {
				t.Fatalf("RequestStop(%d): %v", tc.trial, err)
			}
			if tc.want != nil {
				wantErr(t, err, tc.want, fmt.Sprintf("RequestStop(%d)", tc.trial))
			}
		}
		var ts1, ts2 dbTime
		q := s.dialect.rebind("SELECT stop_requested FROM trial WHERE exp_id = ? AND trial_id = ?")
		if err := s.DB().QueryRowContext(ctx, q, "e", 3).Scan(&ts1); err != nil || !ts1.valid {
			t.Fatal(ts1, err)
		}
		if err := stopper.RequestStop(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if err := s.DB().QueryRowContext(ctx, q, "e", 3).Scan(&ts2); err != nil || !ts2.t.Equal(ts1.t) {
			t.Errorf("a second request changed the first one's time: %v -> %v (%v)", ts1.t, ts2.t, err)
		}
		check := func(e storage.Experiment, wantExp bool, wantTrials []int) {
			t.Helper()
			gotExp, gotTrials, err := e.StopRequests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if gotExp != wantExp || fmt.Sprint(gotTrials) != fmt.Sprint(wantTrials) {
				t.Errorf("StopRequests of %s = %v, %v; want %v, %v", e.Info().ID, gotExp, gotTrials, wantExp, wantTrials)
			}
		}
		check(exp, true, []int{2, 3})
		check(owner, true, []int{2, 3})
		check(other, false, nil)
		if d := mustDetail(t, exp, 3); !d.StopRequested {
			t.Errorf("trial 3 does not show its stop request")
		}
		if d := mustDetail(t, exp, 4); d.StopRequested {
			t.Errorf("trial 4 shows a stop request")
		}
		// A trial asked to stop is not claimed, even unowned.
		if got := mustClaim(t, exp.WithOwner("x", time.Minute), 10); fmt.Sprint(ids(got)) != "[4]" {
			t.Errorf("claimed %v, want [4]", ids(got))
		}
		// The owner cancels its trial; the driver cancels the unowned one.
		if err := owner.Finish(ctx, 2, storage.TrialOutcome{Status: trial.CANCELED}); err != nil {
			t.Fatal(err)
		}
		if err := exp.Finish(ctx, 3, storage.TrialOutcome{Status: trial.CANCELED}); err != nil {
			t.Fatal(err)
		}
		check(exp, true, nil)
		if d := mustDetail(t, exp, 3); !d.StopRequested || d.Status != trial.CANCELED {
			t.Errorf("cancelled trial 3: %+v", d.Trial)
		}
		if err := stopper.ClearStopRequest(ctx); err != nil {
			t.Fatal(err)
		}
		check(exp, false, nil)
	})
}

// TestRetryAndReuse: the links a trial keeps to the trial it retries and
// the trial whose result it reuses.
func TestRetryAndReuse(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		other := newExperiment(t, s, "other")
		mustTrial(t, other, map[string]string{"x": "0"})
		orig := mustTrial(t, exp, map[string]string{"x": "1"}) // 1
		mustFinish(t, exp, orig.ID, trial.FAILED, nil)
		tests := []struct {
			name       string
			spec       storage.TrialSpec
			want       error
			wantRetry  int
			wantReused *storage.TrialRef
		}{
			{"retry", storage.TrialSpec{RetryOf: 1}, nil, 1, nil},            // 2
			{"retry of a retry", storage.TrialSpec{RetryOf: 2}, nil, 1, nil}, // 3
			{"reuse here", storage.TrialSpec{ReusedFrom: &storage.TrialRef{TrialID: 1}}, nil, 0, &storage.TrialRef{ExperimentID: "e", TrialID: 1}},
			{"reuse elsewhere", storage.TrialSpec{RetryOf: 3, ReusedFrom: &storage.TrialRef{ExperimentID: "other", TrialID: 1}}, nil, 1, &storage.TrialRef{ExperimentID: "other", TrialID: 1}},
			{"retry of unknown", storage.TrialSpec{RetryOf: 99}, storage.ErrInvalid, 0, nil},
			{"retry negative", storage.TrialSpec{RetryOf: -1}, storage.ErrInvalid, 0, nil},
			{"reuse unknown experiment", storage.TrialSpec{ReusedFrom: &storage.TrialRef{ExperimentID: "nope", TrialID: 1}}, storage.ErrInvalid, 0, nil},
			{"reuse unknown trial", storage.TrialSpec{ReusedFrom: &storage.TrialRef{TrialID: 99}}, storage.ErrInvalid, 0, nil},
			{"reuse no trial", storage.TrialSpec{ReusedFrom: &storage.TrialRef{ExperimentID: "other"}}, storage.ErrInvalid, 0, nil},
		}
		for i, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				tc.spec.Params = map[string]string{"x": "1"}
				trials := count(t, s, "SELECT COUNT(*) FROM trial")
				tr, err := exp.NewTrial(ctx, tc.spec)
				if tc.want != nil {
					wantErr(t, err, tc.want, tc.name)
					if got := count(t, s, "SELECT COUNT(*) FROM trial"); got != trials {
						t.Errorf("a refused NewTrial stored a trial")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				d := mustDetail(t, exp, tr.ID)
				for _, got := range []storage.Trial{tr, d.Trial} {
					if got.RetryOf != tc.wantRetry || !cmp.Equal(got.ReusedFrom, tc.wantReused) {
						t.Errorf("case %d: RetryOf %d ReusedFrom %+v; want %d %+v", i, got.RetryOf, got.ReusedFrom, tc.wantRetry, tc.wantReused)
					}
				}
			})
		}
		retries, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]int{}
		for _, tr := range retries {
			if tr.RetryOf != 0 {
				got[tr.ID] = tr.RetryOf
			}
		}
		if diff := cmp.Diff(map[int]int{2: 1, 3: 1, 5: 1}, got); diff != "" {
			t.Errorf("retries (-want +got):\n%s", diff)
		}
	})
}

// TestReuseLookup: FindSucceeded and InFlight find the trials of a
// configuration and repeat; Counts counts an experiment's trials.
func TestReuseLookup(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		s := open(t, cfg)
		exp := newExperiment(t, s, "e")
		other := newExperiment(t, s, "other")
		pA, pB := map[string]string{"x": "a"}, map[string]string{"x": "b"}
		queue := func(e storage.Experiment, hash string, p map[string]string, repeat string) int {
			t.Helper()
			tr, err := e.NewTrial(ctx, storage.TrialSpec{ConfigHash: hash, Params: p, Metadata: map[string]string{"repeat_i": repeat, "optimizer": "mock"}})
			if err != nil {
				t.Fatal(err)
			}
			return tr.ID
		}
		mustFinish(t, exp, queue(exp, "A", pA, "1"), trial.FAILED, nil)                                 // 1
		mustFinish(t, exp, queue(exp, "A", pA, "1"), trial.SUCCEEDED, map[string]any{"score": 2.0})     // 2
		mustFinish(t, exp, queue(exp, "A", pA, "1"), trial.SUCCEEDED, map[string]any{"score": 3.0})     // 3
		queue(exp, "A", pA, "2")                                                                        // 4
		stopped := queue(exp, "A", pA, "3")                                                             // 5
		running := queue(exp, "A", pA, "3")                                                             // 6
		mustFinish(t, exp, queue(exp, "A", pA, "4"), trial.CANCELED, nil)                               // 7
		mustFinish(t, other, queue(other, "B", pB, "1"), trial.SUCCEEDED, map[string]any{"score": 1.0}) // other's 1
		if err := exp.RequestStop(ctx, stopped); err != nil {
			t.Fatal(err)
		}
		if err := exp.UpdateStatus(ctx, running, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		// Looked up from another process.
		look, err := open(t, cfg).LoadExperiment(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		type find func(ctx context.Context, hash, repeat string) (storage.Trial, bool, error)
		tests := []struct {
			name         string
			fn           find
			hash, repeat string
			want         int // 0: none
		}{
			{"succeeded", look.FindSucceeded, "A", "1", 2},
			{"succeeded any repeat", look.FindSucceeded, "A", "", 2},
			{"succeeded other repeat", look.FindSucceeded, "A", "2", 0},
			{"succeeded canceled", look.FindSucceeded, "A", "4", 0},
			{"succeeded other experiment", look.FindSucceeded, "B", "1", 0},
			{"succeeded unknown hash", look.FindSucceeded, "Z", "1", 0},
			{"in flight", look.InFlight, "A", "2", 4},
			{"in flight any repeat", look.InFlight, "A", "", 4},
			{"in flight skips stopped", look.InFlight, "A", "3", running},
			{"in flight finished only", look.InFlight, "A", "1", 0},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				tr, ok, err := tc.fn(ctx, tc.hash, tc.repeat)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					if tc.want != 0 {
						t.Fatalf("found nothing, want trial %d", tc.want)
					}
					return
				}
				if tr.ID != tc.want {
					t.Fatalf("found trial %d, want %d", tr.ID, tc.want)
				}
				if tr.ConfigHash != tc.hash || tr.Params["x"] != "a" || tr.Metadata["optimizer"] != "mock" {
					t.Errorf("trial %+v", tr)
				}
				if tr.Status == trial.SUCCEEDED && tr.Results["score"] != 2.0 {
					t.Errorf("results %v", tr.Results)
				}
			})
		}
		_, _, err = look.FindSucceeded(ctx, " ", "1")
		wantErr(t, err, storage.ErrInvalid, "FindSucceeded with an empty hash")

		counts, err := look.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[trial.Status]int{trial.FAILED: 1, trial.SUCCEEDED: 2, trial.PENDING: 2, trial.RUNNING: 1, trial.CANCELED: 1}
		if diff := cmp.Diff(want, counts); diff != "" {
			t.Errorf("Counts (-want +got):\n%s", diff)
		}
	})
}

func TestWorkers(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "w", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
		if err != nil {
			t.Fatal(err)
		}
		driver := exp.WithOwner("driver", time.Minute)
		w1 := exp.WithOwner("w1", time.Minute)
		w2 := exp.WithOwner("w2", 500*time.Millisecond)
		if err := exp.RegisterWorker(ctx, 2); !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("registering without an owner: %v", err)
		}
		if err := w1.RegisterWorker(ctx, 0); !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("registering 0 runners: %v", err)
		}
		for _, w := range []storage.Experiment{w1, w1, w2} { // registering again renews
			if err := w.RegisterWorker(ctx, map[storage.Experiment]int{w1: 3, w2: 4}[w]); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := driver.WorkerRunners(ctx); err != nil || n != 7 {
			t.Errorf("WorkerRunners = %d, %v; want 7", n, err)
		}
		if n, _ := w1.WorkerRunners(ctx); n != 4 {
			t.Errorf("a worker does not count itself: %d, want 4", n)
		}
		time.Sleep(600 * time.Millisecond) // w2's lease runs out
		if n, _ := driver.WorkerRunners(ctx); n != 3 {
			t.Errorf("after w2's lease expired: %d, want 3", n)
		}
		if err := w1.UnregisterWorker(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := driver.WorkerRunners(ctx); n != 0 {
			t.Errorf("after w1 left: %d, want 0", n)
		}
	})
}
