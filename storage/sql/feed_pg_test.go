package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/trial"
)

// TestChangesOutOfOrderCommits (PostgreSQL, schema version 9): a change's
// number is its transaction's id, and writers take no lock of the feed's
// own, so a transaction that began later (a larger id) commits while an
// earlier one is still open. The reader must not move past the earlier
// one: it is given neither change until the earlier transaction ends,
// then both. A transaction with an id in another database of the server
// holds the feed back the same way (the latency an open transaction
// costs, see docs/storage.md); a read-only one does not.
func TestChangesOutOfOrderCommits(t *testing.T) {
	b := postgresBackend
	cfg := b.fresh(t)
	ctx := context.Background()
	s := open(t, cfg)
	exp := newExperiment(t, s, "feed")
	mustTrial(t, exp, map[string]string{"x": "1"})
	mustTrial(t, exp, map[string]string{"x": "2"})
	_, n := drain(t, b, s, exp, 0)

	// The earlier writer: a transaction of its own that changes trial 1
	// as bench does (its id into bench_seq) and stays open.
	early, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Rollback()
	var earlyID int64
	if err := early.QueryRowContext(ctx, `UPDATE trial SET status = 'READY', bench_seq = `+pgXactID+`
		WHERE exp_id = $1 AND trial_id = 1 RETURNING bench_seq`, exp.Info().ID).Scan(&earlyID); err != nil {
		t.Fatal(err)
	}
	// The later writer, through the store, commits without waiting for it.
	done := make(chan error, 1)
	go func() { done <- exp.UpdateStatus(ctx, 2, trial.RUNNING, time.Time{}) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a writer waited for another writer's open transaction")
	}
	trs, next, err := exp.Changes(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 0 || next > earlyID {
		t.Fatalf("with an older transaction open: Changes(%d) = %v, %d; want nothing, at most %d", n, ids(trs), next, earlyID)
	}
	if err := early.Commit(); err != nil {
		t.Fatal(err)
	}
	trs, n = drain(t, b, s, exp, next)
	if len(trs) != 2 || trs[0].Status != trial.READY || trs[1].Status != trial.RUNNING {
		t.Fatalf("once it committed: %v; want trial 1 READY and trial 2 RUNNING", trs)
	}

	// Another database of the server: an open transaction with an id.
	admin, err := dbsql.Open("pgx", testenv.Get(t, "BENCH_TEST_PG_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	other, err := admin.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	var otherID int64
	if err := other.QueryRowContext(ctx, `SELECT `+pgXactID).Scan(&otherID); err != nil {
		t.Fatal(err)
	}
	mustFinish(t, exp, 2, trial.SUCCEEDED, map[string]any{"score": 1.0})
	if trs, next, err := exp.Changes(ctx, n); err != nil || len(trs) != 0 || next > otherID {
		t.Fatalf("with a transaction open in another database: Changes(%d) = %v, %d, %v; want nothing, at most %d", n, ids(trs), next, err, otherID)
	}
	if err := other.Rollback(); err != nil {
		t.Fatal(err)
	}
	if trs, n = drain(t, b, s, exp, n); fmt.Sprint(ids(trs)) != "[2]" || trs[0].Status != trial.SUCCEEDED {
		t.Fatalf("once it ended: %v", trs)
	}

	// A read-only transaction has no id and holds nothing back.
	ro, err := admin.BeginTx(ctx, &dbsql.TxOptions{ReadOnly: true, Isolation: dbsql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Rollback()
	var one int
	if err := ro.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		t.Fatal(err)
	}
	mustFinish(t, exp, 1, trial.FAILED, nil)
	if trs, _ = drain(t, b, s, exp, n); fmt.Sprint(ids(trs)) != "[1]" {
		t.Fatalf("with a read-only transaction open: %v", ids(trs))
	}
}

// TestFeedMigrationPostgres: schema version 9 drops bench_feed, and
// numbers a version-8 bench gave stay in trial.bench_seq: a reader from 0
// gets every trial, then only what changes (an old number is below the
// ids that follow); version 8 again (down) gets bench_feed back at the
// experiment's largest number, so that a bench of version 8 continues
// after it.
func TestFeedMigrationPostgres(t *testing.T) {
	b := postgresBackend
	cfg := b.fresh(t)
	ctx := context.Background()
	s := open(t, cfg)
	exp := newExperiment(t, s, "feed")
	for i := range 3 {
		mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
	}
	_, latest, err := s.SchemaVersion(ctx)
	if err != nil || latest < 9 {
		t.Fatalf("latest schema version %d, %v", latest, err)
	}
	tables := func() []string {
		t.Helper()
		names, err := s.Tables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	hasFeed := func() bool { return cmp.Equal(tables()[:1], []string{"bench_feed"}) }
	if hasFeed() {
		t.Fatal("bench_feed at schema version 9")
	}
	var largest int64
	if err := s.DB().QueryRow(`SELECT MAX(bench_seq) FROM trial`).Scan(&largest); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, s, 8)
	if !hasFeed() {
		t.Fatal("no bench_feed at schema version 8")
	}
	if n := count(t, s, `SELECT COUNT(*) FROM bench_feed WHERE exp_id = 'feed' AND seq = ?`, largest); n != 1 {
		t.Errorf("bench_feed after going down: %d rows at the largest number %d, want 1", n, largest)
	}
	// As a bench of version 8 numbered them: a counter per experiment.
	if _, err := s.DB().Exec(`UPDATE trial SET bench_seq = trial_id; UPDATE bench_feed SET seq = 3`); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, s, latest)
	if hasFeed() {
		t.Fatal("bench_feed after going up to version 9")
	}
	s2 := open(t, cfg)
	exp2, _, err := s2.Experiment(ctx, exp.Info())
	if err != nil {
		t.Fatal(err)
	}
	trs, n := drain(t, b, s2, exp2, 0)
	if fmt.Sprint(ids(trs)) != "[1 2 3]" || n <= 3 {
		t.Fatalf("Changes(0) after the upgrade: %v, %d", ids(trs), n)
	}
	if err := exp2.UpdateStatus(ctx, 2, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if trs, _ = drain(t, b, s2, exp2, n); fmt.Sprint(ids(trs)) != "[2]" {
		t.Fatalf("after a change: %v, want [2]", ids(trs))
	}
}
