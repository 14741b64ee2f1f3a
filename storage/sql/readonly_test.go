package sql

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

func dbColumns(t *testing.T, b backend, cfg storage.Config) []string {
	t.Helper()
	db := rawDB(t, b, cfg)
	defer db.Close()
	var out []string
	for _, table := range tableNames(t, b, db) {
		for _, c := range columns(t, b, db, table) {
			out = append(out, table+"."+c)
		}
	}
	q := `SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name`
	if b.name == "postgres" {
		q = `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname`
	}
	for _, ix := range queryStrings(t, db, q) {
		out = append(out, "index "+ix)
	}
	slices.Sort(out)
	return out
}

// TestMlosBenchDatabaseReadOnly: the read-only commands (bench results,
// show, export, plot, report, compare) read an mlos_bench database without
// adopting it: its tables, columns and indexes, and for SQLite its bytes,
// are unchanged; a run (a writable open) still adopts it afterwards.
func TestMlosBenchDatabaseReadOnly(t *testing.T) {
	forEachMlos(t, func(t *testing.T, b backend) {
		for _, v := range mlosVersions {
			t.Run(v.name, func(t *testing.T) {
				ctx := context.Background()
				cfg, db := mlosDB(t, b, v)
				before := mlosSnapshot(t, db, v)
				db.Close()
				schema := dbColumns(t, b, cfg)
				var sum [32]byte
				if b.name == "sqlite" {
					sum = fileSum(t, cfg.Database)
				}
				for i := 0; i < 2; i++ { // twice: nothing left behind either
					ro := cfg
					ro.ReadOnly, ro.NoCreate = true, true
					s := open(t, ro)
					sums, err := s.Experiments(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if len(sums) != 1 || sums[0].ID != "mlos-exp" || sums[0].Trials[trial.SUCCEEDED] != 2 || sums[0].Trials[trial.FAILED] != 1 || sums[0].Trials[trial.PENDING] != 1 {
						t.Fatalf("Experiments = %+v", sums)
					}
					exp, err := s.LoadExperiment(ctx, "mlos-exp")
					if err != nil {
						t.Fatal(err)
					}
					trials, err := exp.Trials(ctx, storage.TrialFilter{})
					if err != nil || len(trials) != 4 {
						t.Fatalf("Trials = %d, %v", len(trials), err)
					}
					d, err := exp.Trial(ctx, 2)
					if err != nil {
						t.Fatal(err)
					}
					if score, ok := d.Results.Float("score"); !ok || score != 7.25 || d.Params["x"] != "20" || len(d.Output) != 0 || len(d.Telemetry) != 1 || len(d.History) != 2 {
						t.Errorf("trial 2 = %+v", d)
					}
					if _, err := exp.Counts(ctx); err != nil {
						t.Fatal(err)
					}
					// The change feed: mlos_bench's trials have no number,
					// so a poll from 0 returns them all and the next none.
					changed, next, err := exp.Changes(ctx, 0)
					if err != nil || len(changed) != 4 || next != 0 {
						t.Fatalf("Changes(0) = %d trials, %d, %v", len(changed), next, err)
					}
					s.Close()
					if diff := cmp.Diff(schema, dbColumns(t, b, cfg)); diff != "" {
						t.Fatalf("read-only open changed the schema (-before +after):\n%s", diff)
					}
					if b.name == "sqlite" && fileSum(t, cfg.Database) != sum {
						t.Fatal("read-only open changed the SQLite file's bytes")
					}
				}
				db = rawDB(t, b, cfg)
				if diff := cmp.Diff(before, mlosSnapshot(t, db, v)); diff != "" {
					t.Errorf("mlos_bench's rows changed (-before +after):\n%s", diff)
				}
				// A run adopts it.
				s := open(t, cfg)
				defer s.Close()
				if after := dbColumns(t, b, cfg); !slices.Contains(after, "trial.failure_reason") || !strings.Contains(strings.Join(after, " "), "trial_output.") {
					t.Errorf("a writable open did not adopt the database: %v", after)
				}
			})
		}
	})
}
