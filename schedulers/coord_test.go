package schedulers

import (
	"bytes"
	"context"
	"crypto/rand"
	dbsql "database/sql"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/internal/clock"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// elsewhere is the owner of another process's trials in these tests (of
// another host: never taken over).
const elsewhere = "elsewhere.example:1:ffff"

// coordBackends opens a fresh storage per backend: SQLite, and PostgreSQL
// where BENCH_TEST_PG_URL is set (scripts/testenv/postgres.sh; the
// subtest skips without).
var coordBackends = []struct {
	name string
	open func(t *testing.T) storage.Storage
}{
	{"sqlite", func(t *testing.T) storage.Storage {
		return openStoreOn(t, filepath.Join(t.TempDir(), "db.sqlite"), nil)
	}},
	{"postgres", func(t *testing.T) storage.Storage {
		admin := testenv.Get(t, "BENCH_TEST_PG_URL")
		cfg, err := storage.ParseURL(admin)
		if err != nil {
			t.Fatal(err)
		}
		db, err := dbsql.Open("pgx", admin)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		b := make([]byte, 6)
		rand.Read(b)
		cfg.Database = "bench_coord_test_" + hex.EncodeToString(b)
		if _, err := db.Exec("CREATE DATABASE " + cfg.Database); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := db.Exec("DROP DATABASE " + cfg.Database + " WITH (FORCE)"); err != nil {
				t.Errorf("drop %s: %v", cfg.Database, err)
			}
		})
		st, err := storage.Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// detectOthers tells another process's trial from this process's own
// through the change feed: the trials stored before the start, queued
// ahead, stored held, claimed, finished and retried here never set others;
// a trial another process adds does, and the feed's number stays where it
// was so that pollOthers then observes that trial's result.
func TestDetectOthersReadsTheFeed(t *testing.T) {
	for _, b := range coordBackends {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			st := b.open(t)
			exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
			if err != nil {
				t.Fatal(err)
			}
			other := exp.WithOwner(elsewhere, 30*time.Second)
			addOther := func(x string) storage.Trial {
				t.Helper()
				tr, err := other.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": x}, Metadata: map[string]string{"repeat_i": "1"}})
				if err != nil {
					t.Fatal(err)
				}
				return tr
			}
			// Stored before this process starts (by another process): known.
			for _, x := range []string{"1", "2", "3"} {
				if err := other.Finish(ctx, addOther(x).ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}); err != nil {
					t.Fatal(err)
				}
			}
			tun := testTunables(t)
			opt, err := optimizers.New(optimizers.Spec{Class: "mlos_bench.optimizers.MlosCoreOptimizer",
				Config: map[string]any{"optimizer_type": "RANDOM", "seed": int64(5)}, Tunables: tun.Copy()})
			if err != nil {
				t.Fatal(err)
			}
			runner := NewLocalRunner(1, &parEnv{fakeEnv: fakeEnv{tun: tun.Copy()}, id: 1})
			s, err := New(Config{ExperimentID: "e", Parallel: true, NumTrialRunners: 1, MaxRetries: 1}, []Runner{runner}, opt, exp, Options{Tunables: tun})
			if err != nil {
				t.Fatal(err)
			}
			d, err := s.newDispatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			startSeq := d.feedSeq
			detect := func(when string, want bool) {
				t.Helper()
				d.detectOthers(ctx)
				if d.others != want {
					t.Fatalf("%s: others = %v, want %v", when, d.others, want)
				}
			}
			detect("at the start (three trials of an earlier process stored)", false)

			// This process's own trials, through the dispatcher's paths.
			sugs, err := opt.Suggest(ctx, 2)
			if err != nil || len(sugs) != 2 {
				t.Fatalf("suggest: %v %v", sugs, err)
			}
			if err := d.queueSuggestion(ctx, sugs[0], 0, false); err != nil { // queued ahead, unowned
				t.Fatal(err)
			}
			if err := d.queueSuggestion(ctx, sugs[1], 1, true); err != nil { // stored, held
				t.Fatal(err)
			}
			detect("after this process queued a trial ahead and stored one", false)
			claimed, err := s.exp.Claim(ctx, 1) // as refill claims the trial queued ahead
			if err != nil || len(claimed) != 1 {
				t.Fatalf("claim: %v %v", claimed, err)
			}
			if len(d.queue) != 1 {
				t.Fatalf("queue %+v, want the stored trial", d.queue)
			}
			held := d.queue[0].t
			if err := s.exp.Finish(ctx, claimed[0].ID, trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 2.0}}); err != nil {
				t.Fatal(err)
			}
			failed := trial.Outcome{Status: trial.FAILED, FailureReason: "exit status 1"}
			if err := s.exp.Finish(ctx, held.ID, failed); err != nil {
				t.Fatal(err)
			}
			if err := d.retry(ctx, &job{item: d.itemFor(held), runner: runner}, failed); err != nil {
				t.Fatal(err)
			}
			detect("after this process's trials were claimed, finished and retried", false)
			if d.feedSeq == startSeq {
				t.Errorf("the feed's number stayed at %d after reading only this process's changes", startSeq)
			}

			// Another process adds a trial.
			seq := d.feedSeq
			foreign := addOther("9")
			detect("after another process added a trial", true)
			if d.feedSeq != seq {
				t.Errorf("the feed's number moved from %d to %d past another process's change", seq, d.feedSeq)
			}
			if err := other.Finish(ctx, foreign.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 0.5}}); err != nil {
				t.Fatal(err)
			}
			if err := d.pollOthers(ctx); err != nil {
				t.Fatal(err)
			}
			if !d.observed[foreign.ID] {
				t.Errorf("pollOthers did not observe trial %d of the other process", foreign.ID)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A whole run on the fake clock, each trial held over two ticks (each
// tick reads the change feed for other processes' trials): this process's
// trials (two runners, one queued ahead, a retry) never make it think
// another process is there; a trial another process adds during the run
// does, at the next tick.
func TestOwnTrialsNeverSetOthers(t *testing.T) {
	fake := clock.NewFake(time.Now())
	ticks, onTick := hookSignal()
	logs := &syncBuffer{}
	started := make(chan int, 8)
	proceed := make(chan struct{})
	path := filepath.Join(t.TempDir(), "db.sqlite")
	p := newPar(t, path, Config{ExperimentID: "e", Parallel: true, MaxRetries: 1, QueueAhead: 1}, 2, "",
		map[string]any{"optimizer_type": "RANDOM", "max_suggestions": int64(5), "seed": int64(2)},
		Options{Clock: fake, Tick: time.Second, onTick: onTick, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		func(ctx context.Context, params environments.Params) environments.Result {
			id := int(params["trial_id"].(int64))
			started <- id
			select {
			case <-proceed:
			case <-ctx.Done():
			}
			if id == 1 {
				return environments.Result{Status: trial.FAILED, Reason: "first attempt fails"}
			}
			return score(params)
		})
	errc := make(chan error, 1)
	go func() { errc <- p.sched.Start(context.Background()) }()
	fake.WaitTickers(2)
	var runErr error
	ended := false
	// step advances the clock a second and waits for the tick handled (or
	// the end of the run).
	step := func() {
		t.Helper()
		if ended {
			return
		}
		drainHook(ticks)
		fake.Advance(time.Second)
		select {
		case <-ticks:
		case runErr = <-errc:
			ended = true
		case <-time.After(hookSafety):
			t.Fatal("no tick handled")
		}
	}
	other := p.exp.WithOwner(elsewhere, 30*time.Second)
	ran, foreign := 0, 0
	deadline := time.Now().Add(hookSafety)
	for !ended {
		select {
		case <-started:
			step()
			step()
			ran++
			if ran == 4 {
				if strings.Contains(logs.String(), othersFound) {
					t.Fatalf("after %d of this process's trials, other processes were detected:\n%s", ran, logs)
				}
				// A configuration the experiment holds (this process's first,
				// another repeat): a new one would take one of the 5 of
				// max_suggestions, which storage counts over the experiment,
				// so the run's trials would depend on whether this process
				// stored its fifth configuration before it.
				held := trials(t, p.exp)[0]
				tr, err := other.NewTrial(context.Background(), storage.TrialSpec{ConfigHash: held.ConfigHash, Params: held.Params, Metadata: map[string]string{"repeat_i": "2"}})
				if err != nil {
					t.Fatal(err)
				}
				foreign = tr.ID
				step()
				if !strings.Contains(logs.String(), othersFound) {
					t.Fatalf("another process's trial %d was not detected at the next tick:\n%s", foreign, logs)
				}
				if err := other.Finish(context.Background(), foreign, storage.TrialOutcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 50.0}}); err != nil {
					t.Fatal(err)
				}
			}
			proceed <- struct{}{}
		case runErr = <-errc:
			ended = true
		case <-time.After(20 * time.Millisecond):
			// Nothing started: let the dispatcher's ticks go on.
			if time.Now().After(deadline) {
				t.Fatalf("the run did not end; %d trials ran", ran)
			}
			step()
		}
		if foreign == 0 && strings.Contains(logs.String(), othersFound) {
			t.Fatalf("after %d of this process's trials, other processes were detected:\n%s", ran, logs)
		}
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	if foreign == 0 {
		t.Fatalf("the run ended after %d trials, before another process's trial was added", ran)
	}
	ts := trials(t, p.exp)
	retries := 0
	for _, tr := range ts {
		if tr.RetryOf != 0 {
			retries++
		}
	}
	if len(ts) != 7 || retries != 1 {
		t.Errorf("%d trials stored (%d retries), want 5 suggestions, a retry and the other process's trial", len(ts), retries)
		for _, tr := range ts {
			t.Logf("trial %d: %s %v repeat %s, retry of %d", tr.ID, tr.Status, tr.Params, tr.Metadata["repeat_i"], tr.RetryOf)
		}
	}
}

// Every trial the dispatcher stores must be noted by d.added, or
// detectOthers takes it for another process's (and the driver falls back
// to reading everything from storage): no file of the package but coord.go
// logs an added trial itself (logAdded), and every file that stores a
// trial (NewTrial) notes it.
func TestTrialsAddedThroughAdded(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		if f != "coord.go" && f != "mloslog.go" && strings.Contains(src, "logAdded(") {
			t.Errorf("%s logs an added trial itself: call d.added(t) (coord.go) so that detectOthers knows it", f)
		}
		if stores, notes := strings.Count(src, ".NewTrial("), strings.Count(src, "d.added("); stores > notes {
			t.Errorf("%s stores %d trials (NewTrial) and notes %d (d.added)", f, stores, notes)
		}
	}
}
