package sql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// MySQL and MariaDB, schema version 10: the readers number the changes
// (feed.go).

// mysqlFeed opens a fresh MySQL database (with logger, if not nil) and
// an experiment with n trials, all read once (numbered), and returns the
// feed's number after them.
func mysqlFeed(t *testing.T, logs *logBuffer, n int) (*Store, *experiment, int64) {
	t.Helper()
	cfg := freshMySQL(t)
	if logs != nil {
		cfg.Logger = logs.logger()
	}
	s := open(t, cfg)
	exp := newExperiment(t, s, "feed").(*experiment)
	for i := range n {
		mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
	}
	trs, since, err := exp.Changes(context.Background(), 0)
	if err != nil || len(trs) != n || since < 1 {
		t.Fatalf("Changes(0) = %v, %d, %v", ids(trs), since, err)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM trial WHERE bench_seq IS NULL`); c != 0 {
		t.Fatalf("%d trials left pending after a poll", c)
	}
	return s, exp, since
}

// waitLockWait waits (at most a minute) until a statement containing
// query waits for a row lock on the server, or until done is closed;
// it reports whether one did.
func waitLockWait(t *testing.T, s *Store, query string, done <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return false
		default:
		}
		var n int
		err := s.DB().QueryRow(`SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE ?`,
			"%"+query+"%").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return true
		}
		// InnoDB refreshes what INNODB_TRX shows only when it was last
		// read 0.1 s ago or more.
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("no statement with %q waited for a lock within a minute", query)
	return false
}

// TestChangesWriterHeldOpen: a writer's change that has not committed
// while a reader numbers and reads the feed is neither numbered nor read
// then; once committed, a later poll returns it. The reader numbers the
// other, committed, change meanwhile (and may wait for the writer's row:
// either way nothing is missed).
func TestChangesWriterHeldOpen(t *testing.T) {
	ctx := context.Background()
	s, exp, since := mysqlFeed(t, nil, 2)
	if err := exp.UpdateStatus(ctx, 2, trial.READY, time.Time{}); err != nil {
		t.Fatal(err)
	}
	written, commit, wrote := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		// UpdateStatus(1, RUNNING), held open before its commit.
		wrote <- s.write(ctx, func(r runner) error {
			_, err := r.exec(ctx, `UPDATE trial SET status = ?, bench_seq = `+exp.seqExpr()+` WHERE exp_id = ? AND trial_id = ?`,
				trial.RUNNING.String(), exp.seqArg(), exp.info.ID, 1)
			if err == nil {
				err = exp.addHistory(ctx, r, 1, time.Now(), trial.RUNNING)
			}
			close(written)
			<-commit
			return err
		})
	}()
	<-written
	type poll struct {
		trs  []storage.Trial
		next int64
		err  error
	}
	first := make(chan poll, 1)
	polled := make(chan struct{})
	go func() {
		trs, next, err := exp.Changes(ctx, since)
		first <- poll{trs, next, err}
		close(polled)
	}()
	waited := waitLockWait(t, s, "bench_seq IS NULL", polled)
	t.Logf("the reader waited for the writer: %v", waited)
	close(commit)
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	p := <-first
	if p.err != nil {
		t.Fatal(p.err)
	}
	seen := map[int]trial.Status{}
	for _, tr := range p.trs {
		seen[tr.ID] = tr.Status
	}
	if st, ok := seen[1]; seen[2] != trial.READY || (ok && st != trial.RUNNING) {
		t.Fatalf("poll with the writer open (waited for it: %v): %v", waited, seen)
	}
	trs, _, err := exp.Changes(ctx, p.next)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		seen[tr.ID] = tr.Status
	}
	if st, ok := seen[1]; !ok || st != trial.RUNNING {
		t.Fatalf("the change committed after the first poll (waited for it: %v) was not returned by the next: %v", waited, seen)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM trial WHERE bench_seq IS NULL`); c != 0 {
		t.Errorf("%d trials left pending", c)
	}
}

// TestChangesDeadlockRetried: a numbering reader holds a pending trial it
// numbered and waits for another that a writer holds; the writer then
// changes the first. InnoDB rolls one back (the reader, which holds
// less), and the reader's transaction runs again: its poll succeeds and
// returns every change, the writer's included.
func TestChangesDeadlockRetried(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	const n = 20
	s, exp, since := mysqlFeed(t, &logs, n)
	deadlocks := func() int {
		var name string
		var v int
		if err := s.DB().QueryRow(`SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'`).Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := deadlocks()
	// Every trial pending (committed), so that the reader must wait for
	// those the writer holds rather than pass over them.
	for id := 1; id <= n; id++ {
		if err := exp.UpdateStatus(ctx, id, trial.READY, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// The writer changes trials 2..n again, uncommitted (more rows than
	// the reader will hold, so InnoDB picks the reader to roll back).
	tx, err := s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`UPDATE trial SET status = 'RUNNING', bench_seq = NULL WHERE exp_id = ? AND trial_id > 1`, exp.info.ID); err != nil {
		t.Fatal(err)
	}
	type poll struct {
		trs  []storage.Trial
		next int64
		err  error
	}
	res := make(chan poll, 1)
	polled := make(chan struct{})
	go func() {
		trs, next, err := exp.Changes(ctx, since)
		res <- poll{trs, next, err}
		close(polled)
	}()
	if !waitLockWait(t, s, "bench_seq IS NULL", polled) {
		t.Fatal("the reader did not wait for the writer's trials: it numbers nothing")
	}
	// The reader holds trial 1: the writer's change of it closes the cycle.
	if _, err := tx.Exec(`UPDATE trial SET status = 'RUNNING', bench_seq = NULL WHERE exp_id = ? AND trial_id = 1`, exp.info.ID); err != nil {
		t.Fatalf("the writer was rolled back instead of the reader: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	p := <-res
	if p.err != nil {
		t.Fatalf("the reader's poll: %v", p.err)
	}
	if got := deadlocks() - before; got < 1 {
		t.Errorf("Innodb_deadlocks went up by %d, want a deadlock", got)
	}
	if !strings.Contains(logs.String(), "running it again") {
		t.Errorf("the reader's transaction was not run again:\n%s", logs.String())
	}
	seen := map[int]trial.Status{}
	for _, tr := range p.trs {
		seen[tr.ID] = tr.Status
	}
	trs, _, err := exp.Changes(ctx, p.next)
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range trs {
		seen[tr.ID] = tr.Status
	}
	for id := 1; id <= n; id++ {
		if st, ok := seen[id]; !ok || st != trial.RUNNING {
			t.Errorf("trial %d: seen %v (%v), want RUNNING", id, st, ok)
		}
	}
}

// TestChangesReadOnlyUser: a reader whose user may only read numbers
// nothing, and still sees every change: pending ones in every poll until
// a reader that may write numbers them, then by their number.
func TestChangesReadOnlyUser(t *testing.T) {
	ctx := context.Background()
	cfg := freshMySQL(t)
	s := open(t, cfg)
	exp := newExperiment(t, s, "feed")
	for i := range 3 {
		mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	user, password := "bench_ro_"+hex.EncodeToString(b), "ro-"+hex.EncodeToString(b)
	for _, q := range []string{
		fmt.Sprintf(`CREATE USER '%s'@'%%' IDENTIFIED BY '%s'`, user, password),
		fmt.Sprintf("GRANT SELECT ON `%s`.* TO '%s'@'%%'", cfg.Database, user),
	} {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = s.DB().Exec(fmt.Sprintf(`DROP USER '%s'@'%%'`, user)) })
	ro := cfg
	ro.Username, ro.Password, ro.NoCreate = user, password, true // not ReadOnly: the privileges refuse the write
	var logs logBuffer
	ro.Logger = logs.logger()
	// A reader that may write numbers the three trials first.
	if _, _, err := exp.Changes(ctx, 0); err != nil {
		t.Fatal(err)
	}
	rs := open(t, ro)
	rexp, err := rs.LoadExperiment(ctx, "feed")
	if err != nil {
		t.Fatal(err)
	}
	poll := func(since int64) (map[int]trial.Status, int64) {
		t.Helper()
		trs, next, err := rexp.Changes(ctx, since)
		if err != nil {
			t.Fatalf("read-only Changes(%d): %v", since, err)
		}
		out := map[int]trial.Status{}
		for _, tr := range trs {
			out[tr.ID] = tr.Status
		}
		return out, next
	}
	got, since := poll(0)
	if len(got) != 3 || since != 1 {
		t.Fatalf("Changes(0) = %v, %d; want the 3 trials, 1", got, since)
	}
	if err := exp.UpdateStatus(ctx, 2, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // in every poll while it waits
		got, next := poll(since)
		if len(got) != 1 || got[2] != trial.RUNNING || next != since {
			t.Fatalf("a pending change: %v, %d; want trial 2 RUNNING, %d", got, next, since)
		}
	}
	since2 := since
	if !strings.Contains(logs.String(), "may not number the change feed") {
		t.Errorf("no word of the read-only reader:\n%s", logs.String())
	}
	// A reader that may write numbers them; the read-only one then reads
	// them by number, and a change after that.
	if _, _, err := exp.Changes(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got, since2 = poll(since2); len(got) != 1 || got[2] != trial.RUNNING || since2 != since+1 {
		t.Fatalf("after numbering: %v, %d; want trial 2 RUNNING, %d", got, since2, since+1)
	}
	if got, _ = poll(since2); len(got) != 0 {
		t.Fatalf("nothing changed: %v", got)
	}
	if err := exp.UpdateStatus(ctx, 3, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got, _ = poll(since2); len(got) != 1 || got[3] != trial.RUNNING {
		t.Fatalf("a later change: %v, want trial 3 RUNNING", got)
	}
}

// TestFeedMigrationMySQL: going down to schema version 9 numbers the
// pending changes (a version-9 reader reads only numbered ones), and a
// version-9 numbering (a writer's, from bench_feed) is read by a reader
// of version 10 after going up again.
// TestChangesReadOnlyStoreWritesNothing: a store opened for a command
// that only reads (storage.Config.ReadOnly) numbers nothing, even as a
// user who may write: it reads the waiting changes in every poll, and
// they stay waiting for a reader that runs the experiment.
func TestChangesReadOnlyStoreWritesNothing(t *testing.T) {
	ctx := context.Background()
	cfg := freshMySQL(t)
	s := open(t, cfg)
	exp := newExperiment(t, s, "feed")
	for i := range 2 {
		mustTrial(t, exp, map[string]string{"x": fmt.Sprint(i)})
	}
	ro := cfg
	ro.ReadOnly, ro.NoCreate = true, true
	rs := open(t, ro)
	rexp, err := rs.LoadExperiment(ctx, "feed")
	if err != nil {
		t.Fatal(err)
	}
	pending := func() int {
		t.Helper()
		var n int
		if err := s.DB().QueryRow(`SELECT COUNT(*) FROM trial WHERE exp_id = 'feed' AND bench_seq IS NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for range 2 {
		trs, _, err := rexp.Changes(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(trs) != 2 {
			t.Fatalf("read-only Changes(0) = %d trials, want 2", len(trs))
		}
		if n := pending(); n != 2 {
			t.Fatalf("%d trials wait for a number after a read-only poll, want 2 (it wrote)", n)
		}
	}
	if _, _, err := exp.Changes(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d trials wait for a number after a writable reader polled, want 0", n)
	}
}

func TestFeedMigrationMySQL(t *testing.T) {
	ctx := context.Background()
	s, exp, since := mysqlFeed(t, nil, 2)
	if err := exp.UpdateStatus(ctx, 1, trial.RUNNING, time.Time{}); err != nil {
		t.Fatal(err)
	}
	_, latest, err := s.SchemaVersion(ctx)
	if err != nil || latest != 10 {
		t.Fatalf("latest schema version %d, %v; want 10", latest, err)
	}
	migrateTo(t, s, 9)
	if c := count(t, s, `SELECT COUNT(*) FROM trial WHERE bench_seq IS NULL`); c != 0 {
		t.Fatalf("%d trials pending at version 9", c)
	}
	if c := count(t, s, `SELECT COUNT(*) FROM trial t JOIN bench_feed f ON f.exp_id = t.exp_id WHERE t.trial_id = 1 AND t.bench_seq = f.seq AND f.seq = ?`, since+1); c != 1 {
		t.Fatalf("trial 1 not numbered at the experiment's next number %d", since+1)
	}
	// As a bench of version 9 writes: the number from bench_feed.
	if _, err := s.DB().Exec(`UPDATE bench_feed SET seq = seq + 1; UPDATE trial SET status = 'READY', bench_seq = ? WHERE trial_id = 2`, since+2); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, s, latest)
	trs, next, err := exp.Changes(ctx, since)
	if err != nil || fmt.Sprint(ids(trs)) != "[1 2]" || next != since+2 {
		t.Fatalf("Changes(%d) after going up again = %v, %d, %v; want [1 2], %d", since, ids(trs), next, err, since+2)
	}
}
