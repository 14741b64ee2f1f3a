package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// TestChanges: the change feed returns exactly the trials changed since a
// number (queued, claimed, started, finished, released, stop requested),
// nothing (and no scan) when nothing changed, not a lease renewal, and
// per experiment.
func TestChanges(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		otherExp := newExperiment(t, s, "other")
		changes := func(since int64) ([]int, int64) {
			t.Helper()
			trs, next, err := exp.Changes(ctx, since)
			if err != nil {
				t.Fatalf("Changes(%d): %v", since, err)
			}
			return ids(trs), next
		}
		// waitFor is changes for changes just made (see drain).
		waitFor := func(since int64) ([]int, int64) {
			t.Helper()
			trs, next := drain(t, b, s, exp, since)
			return ids(trs), next
		}
		if got, next := changes(0); len(got) != 0 || next != 0 {
			t.Fatalf("empty experiment: %v, %d", got, next)
		}
		for i := range 4 {
			mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
		}
		mustTrial(t, otherExp, map[string]string{"x": "9"})
		all, n := waitFor(0)
		if fmt.Sprint(all) != "[1 2 3 4]" || n < numbersFor(b, 4) {
			t.Fatalf("Changes(0) = %v, %d; want the 4 trials", all, n)
		}
		if got, next := changes(n); len(got) != 0 || !unchanged(b, next, n) {
			t.Fatalf("nothing changed: %v, %d (want none, %d)", got, next, n)
		}
		owner := exp.WithOwner("h:1:a", time.Minute)
		claimed, err := owner.Claim(ctx, 2)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		got, n2 := waitFor(n)
		if fmt.Sprint(got) != "[1 2]" || n2 <= n {
			t.Fatalf("after a claim: %v, %d", got, n2)
		}
		if _, err := owner.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		if got, next := changes(n2); len(got) != 0 || !unchanged(b, next, n2) {
			t.Errorf("a lease renewal is no change: %v, %d", got, next)
		}
		if err := owner.UpdateStatus(ctx, 1, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := owner.Finish(ctx, 2, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}); err != nil {
			t.Fatal(err)
		}
		if err := exp.RequestStop(ctx, 4); err != nil {
			t.Fatal(err)
		}
		got, n3 := waitFor(n2)
		if fmt.Sprint(got) != "[1 2 4]" {
			t.Fatalf("after start, finish, stop request: %v", got)
		}
		for _, tr := range mustChanges(t, exp, n2) {
			if tr.ID == 2 && (tr.Status != trial.SUCCEEDED || tr.Results["score"] != 1.0) {
				t.Errorf("finished trial as the feed gives it: %+v", tr)
			}
		}
		if err := owner.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := waitFor(n3); fmt.Sprint(got) != "[1]" {
			t.Errorf("after a release: %v, want [1]", got)
		}
		if _, _, err := exp.Changes(ctx, -1); err == nil {
			t.Error("a negative number: no error")
		}
	})
}

// unchanged reports whether next is the number a poll that found nothing
// may give after since: since itself, or on PostgreSQL, whose numbers are
// the server's transaction ids, a later one (other transactions ended).
func unchanged(b backend, next, since int64) bool {
	if b.name == "postgres" {
		return next >= since
	}
	return next == since
}

// numbersFor is the least number a first poll gives after k transactions
// changed trials: k (one number each), or on MySQL and MariaDB, where the
// reader numbers every change waiting for a number at once, 1.
func numbersFor(b backend, k int64) int64 {
	if b.name == "mysql" {
		return 1
	}
	return k
}

// drain polls the feed from since until it has given every change
// committed so far, and returns the trials it gave (by id, as last seen)
// and the number to ask from next. On PostgreSQL a change shows once every
// transaction older than its own has ended, and another test's may still
// be open on the server: it polls on until the number passes the
// experiment's largest (for at most a minute). Elsewhere one poll does.
func drain(t *testing.T, b backend, s *Store, exp storage.Experiment, since int64) ([]storage.Trial, int64) {
	t.Helper()
	var last dbsql.NullInt64
	if b.name == "postgres" {
		if err := s.DB().QueryRow(`SELECT MAX(bench_seq) FROM trial WHERE exp_id = $1`, exp.Info().ID).Scan(&last); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]storage.Trial{}
	deadline := time.Now().Add(time.Minute)
	for {
		trs, next, err := exp.Changes(context.Background(), since)
		if err != nil {
			t.Fatalf("Changes(%d): %v", since, err)
		}
		since = next
		for _, tr := range trs {
			seen[tr.ID] = tr
		}
		if !last.Valid || next > last.Int64 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed's number stayed at %d, below the experiment's largest, %d, for a minute", next, last.Int64)
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := make([]storage.Trial, 0, len(seen))
	for _, tr := range seen {
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b storage.Trial) int { return a.ID - b.ID })
	return out, since
}

func mustChanges(t *testing.T, exp storage.Experiment, since int64) []storage.Trial {
	t.Helper()
	trs, _, err := exp.Changes(context.Background(), since)
	if err != nil {
		t.Fatal(err)
	}
	return trs
}

// TestChangesConcurrentWriters: a reader polling the feed while several
// writers queue and finish trials sees every trial finished, once the
// writers are done, without ever reading the whole experiment again.
func TestChangesConcurrentWriters(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		// Writers of every kind at once: queue and finish, queue for
		// others, claim + start + finish, finish and queue the next.
		const writers, each = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, 2*writers)
		for w := range writers {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range each {
					var err error
					switch {
					case w == 0:
						var tr storage.Trial
						own := exp.WithOwner(fmt.Sprintf("h:%d:w", w), time.Minute)
						if tr, err = own.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i)}, Running: true}); err == nil {
							err = own.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"})
						}
					case w == 1:
						var tr storage.Trial
						own := exp.WithOwner(fmt.Sprintf("h:%d:q", w), time.Minute)
						if tr, err = own.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i)}, Running: true}); err == nil {
							_, err = own.FinishAndQueue(ctx, tr.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"},
								storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i + 50)}})
						}
					default:
						_, err = exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": fmt.Sprint(w*100 + i)}})
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
			go func() {
				// A claimer per writer: claims queued trials, starts and
				// finishes them.
				defer wg.Done()
				own := exp.WithOwner(fmt.Sprintf("h:%d:c", w), time.Minute)
				for range 3 * each {
					got, err := own.Claim(ctx, 1)
					if err == nil && len(got) == 1 {
						if err = own.UpdateStatus(ctx, got[0].ID, trial.RUNNING, time.Time{}); err == nil {
							err = own.Finish(ctx, got[0].ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"})
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		seen := map[int]trial.Status{}
		var since int64
		poll := func() {
			trs, next, err := exp.Changes(ctx, since)
			if err != nil {
				t.Fatal(err)
			}
			since = next
			for _, tr := range trs {
				seen[tr.ID] = tr.Status
			}
		}
		for polling := true; polling; {
			select {
			case <-done:
				polling = false
			default:
			}
			poll()
		}
		trs, _ := drain(t, b, s, exp, since)
		for _, tr := range trs {
			seen[tr.ID] = tr.Status
		}
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Every trial as storage has it now, seen with its last state.
		all, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(all) || len(all) < writers*each {
			t.Fatalf("saw %d trials, storage has %d (want at least %d)", len(seen), len(all), writers*each)
		}
		for _, tr := range all {
			if seen[tr.ID] != tr.Status {
				t.Errorf("trial %d last seen %s, stored %s", tr.ID, seen[tr.ID], tr.Status)
			}
		}
	})
}

// TestChangesAcrossProcesses: two stores on one database (two bench
// processes) write the same experiment in turn (a schema-9 MySQL writer
// guessed its number from what its process took last: stale here); a
// write that fails leaves nothing behind. A reader (a third store) sees
// every change exactly once, at the number the feed gives, whoever wrote
// it.
func TestChangesAcrossProcesses(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		cfg := b.fresh(t)
		sa := open(t, cfg)
		a := newExperiment(t, sa, "feed")
		resume := func() storage.Experiment {
			exp, _, err := open(t, cfg).Experiment(ctx, a.Info())
			if err != nil {
				t.Fatal(err)
			}
			return exp
		}
		other, reader := resume(), resume()
		var since int64
		step := 0
		expect := func(id int, st trial.Status) {
			t.Helper()
			step++
			trs, next := drain(t, b, sa, reader, since)
			if len(trs) != 1 || trs[0].ID != id || trs[0].Status != st || !nextNumber(b, next, since) {
				t.Fatalf("step %d: Changes(%d) = %v %v, %d; want trial %d %s at %d", step, since, ids(trs), trs, next, id, st, since+1)
			}
			since = next
		}
		tr := mustTrial(t, a, map[string]string{"x": "1"})
		expect(tr.ID, trial.PENDING)
		if err := other.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err != nil {
			t.Fatal(err)
		}
		expect(tr.ID, trial.RUNNING)
		// a did not write the last change.
		if err := a.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}); err != nil {
			t.Fatal(err)
		}
		expect(tr.ID, trial.SUCCEEDED)
		// A failed write rolled back.
		if err := a.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err == nil {
			t.Fatal("a finished trial started again")
		}
		tr2, err := other.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "2"}, Running: true})
		if err != nil {
			t.Fatal(err)
		}
		expect(tr2.ID, trial.RUNNING)
		tr3, err := a.FinishAndQueue(ctx, tr2.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"},
			storage.TrialSpec{Params: map[string]string{"x": "3"}})
		if err != nil {
			t.Fatal(err)
		}
		step++
		trs, next := drain(t, b, sa, reader, since)
		// (One number for both, or on SQLite one each.)
		if fmt.Sprint(ids(trs)) != fmt.Sprint([]int{tr2.ID, tr3.ID}) || next <= since || (b.name != "postgres" && next > since+2) {
			t.Fatalf("step %d: finish and queue: %v, %d; want trials %d and %d after %d", step, ids(trs), next, tr2.ID, tr3.ID, since)
		}
		since = next
		for _, w := range []storage.Experiment{other, a, a, other} {
			if err := w.RequestStop(ctx, tr3.ID); err != nil {
				t.Fatal(err)
			}
			expect(tr3.ID, trial.PENDING)
		}
	})
}

// nextNumber reports whether next is the number a poll that found one
// change may give after since: since+1, or on PostgreSQL (transaction
// ids, shared by the server's databases) a larger one.
func nextNumber(b backend, next, since int64) bool {
	if b.name == "postgres" {
		return next > since
	}
	return next == since+1
}

// TestChangesAheadOfTheFeed: a number ahead of the experiment's (a
// database restored from a backup, or a number a schema-7 bench took that
// no trial kept) gives every trial, as from 0, and the experiment's own
// number, instead of nothing until the numbers catch up.
func TestChangesAheadOfTheFeed(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		for i := range 3 {
			mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
		}
		_, n := drain(t, b, s, exp, 0)
		if n < numbersFor(b, 3) {
			t.Fatalf("Changes(0): %d", n)
		}
		ahead := n + 100
		if b.name == "postgres" {
			ahead = n + 1<<40 // ahead of the server's transaction ids
		}
		trs, next, err := exp.Changes(ctx, ahead)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(trs)) != "[1 2 3]" || !unchanged(b, next, n) || next >= ahead {
			t.Fatalf("Changes(%d) = %v, %d; want every trial and %d", ahead, ids(trs), next, n)
		}
		mustTrial(t, exp, map[string]string{"x": "9"})
		trs, next2 := drain(t, b, s, exp, next)
		if fmt.Sprint(ids(trs)) != "[4]" || next2 <= next {
			t.Fatalf("after resync: %v, %d", ids(trs), next2)
		}
	})
}

// TestChangesConcurrentReaders: writers change trials while two readers
// poll at once, each numbering what it finds pending: each reader sees
// every trial with its last state, and the numbers never repeat a range.
func TestChangesConcurrentReaders(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "feed")
		const writers, each = 3, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"w": fmt.Sprint(w), "i": fmt.Sprint(i)}})
					if err == nil {
						if err = exp.UpdateStatus(ctx, tr.ID, trial.RUNNING, time.Time{}); err == nil {
							err = exp.Finish(ctx, tr.ID, storage.TrialOutcome{Status: trial.FAILED, FailureReason: "x"})
						}
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		seen := [2]map[int]trial.Status{{}, {}}
		since := [2]int64{}
		var rg sync.WaitGroup
		rerrs := make(chan error, 2)
		for r := range 2 {
			rg.Add(1)
			go func() {
				defer rg.Done()
				for polling := true; polling; {
					select {
					case <-done:
						polling = false
					default:
					}
					trs, next, err := exp.Changes(ctx, since[r])
					if err != nil {
						rerrs <- err
						return
					}
					if next < since[r] && b.name != "postgres" {
						rerrs <- fmt.Errorf("reader %d: number went back from %d to %d", r, since[r], next)
						return
					}
					since[r] = next
					for _, tr := range trs {
						seen[r][tr.ID] = tr.Status
					}
				}
			}()
		}
		rg.Wait()
		close(errs)
		close(rerrs)
		for err := range errs {
			t.Fatal(err)
		}
		for err := range rerrs {
			t.Fatal(err)
		}
		all, err := exp.Trials(ctx, storage.TrialFilter{})
		if err != nil || len(all) != writers*each {
			t.Fatalf("Trials: %d, %v", len(all), err)
		}
		for r := range 2 {
			trs, _ := drain(t, b, s, exp, since[r])
			for _, tr := range trs {
				seen[r][tr.ID] = tr.Status
			}
			for _, tr := range all {
				if st, ok := seen[r][tr.ID]; !ok || st != tr.Status {
					t.Errorf("reader %d: trial %d last seen %v (%v), stored %s", r, tr.ID, st, ok, tr.Status)
				}
			}
		}
	})
}
