package sql

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/benchtune/bench/storage"
)

// On SQLite a claimed NewTrial stores the configuration first: a new
// configuration (no trial can hold its claim) costs no trial look-up,
// while a configuration stored before is looked up as always, and one
// stored with other parameter values is refused.
func TestClaimNewConfigSkipsLookupSQLite(t *testing.T) {
	ctx := context.Background()
	var logs logBuffer
	cfg := sqliteBackend.fresh(t)
	cfg.LogSQL = true
	cfg.Logger = logs.logger()
	exp := newExperiment(t, open(t, cfg), "e")
	spec := func(x, repeat string) storage.TrialSpec {
		return storage.TrialSpec{Params: map[string]string{"x": x},
			Metadata: map[string]string{"repeat_i": repeat}, Claim: true, Running: true}
	}
	lookups := func() int { return strings.Count(logs.String(), "p.param_id = 'repeat_i'") }

	before := lookups()
	first, err := exp.NewTrial(ctx, spec("1", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if n := lookups() - before; n != 0 {
		t.Errorf("a new configuration: %d trial look-ups, want 0", n)
	}
	if first.ConfigID <= 0 {
		t.Errorf("config id %d", first.ConfigID)
	}

	// The same configuration and repeat: looked up, and claimed.
	before = lookups()
	_, err = exp.NewTrial(ctx, spec("1", "1"))
	var ce *storage.ClaimedError
	if !errors.As(err, &ce) || ce.Trial.ID != first.ID {
		t.Fatalf("same configuration and repeat: %v, want claimed by trial %d", err, first.ID)
	}
	if n := lookups() - before; n != 1 {
		t.Errorf("a stored configuration: %d trial look-ups, want 1", n)
	}

	// Another repeat of a stored configuration: its config id is reused.
	second, err := exp.NewTrial(ctx, spec("1", "2"))
	if err != nil {
		t.Fatal(err)
	}
	if second.ConfigID != first.ConfigID {
		t.Errorf("repeat 2 has config %d, repeat 1 config %d", second.ConfigID, first.ConfigID)
	}

	// A hash stored with other parameter values: the claim first (as
	// before), then, with no trial holding it, refused.
	bad := spec("2", "1")
	bad.ConfigHash = first.ConfigHash
	if _, err := exp.NewTrial(ctx, bad); !errors.As(err, &ce) || ce.Trial.ID != first.ID {
		t.Errorf("a stored hash with other values, claimed: %v, want claimed by trial %d", err, first.ID)
	}
	bad.Metadata = map[string]string{"repeat_i": "3"}
	if _, err := exp.NewTrial(ctx, bad); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("a stored hash with other values: %v, want ErrInvalid", err)
	}

	// A claim refused after its configuration was stored keeps nothing of
	// it: the transaction rolled back.
	trials, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(trials) != 2 {
		t.Errorf("%d trials stored, want 2", len(trials))
	}
}

// A write transaction the database rolls back runs again (a deadlock on
// MySQL): the second attempt stores the new trial's configuration again
// instead of keeping the id the rolled-back attempt had given it, which
// no longer exists (or, worse, is another configuration's by then).
func TestInsertTrialAgainAfterRollback(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		e, ok := newExperiment(t, s, "e").(*experiment)
		if !ok {
			t.Skip("not the SQL experiment")
		}
		nt, err := e.planTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "fresh"}})
		if err != nil {
			t.Fatal(err)
		}
		rollback := errors.New("rolled back")
		attempt := func(fail bool) error {
			return e.s.write(ctx, func(r runner) error {
				if err := e.insertTrial(ctx, r, nt, 0, false); err != nil {
					return err
				}
				if fail {
					return rollback
				}
				return nil
			})
		}
		if err := attempt(true); !errors.Is(err, rollback) {
			t.Fatalf("first attempt: %v", err)
		}
		if err := attempt(false); err != nil {
			t.Fatalf("second attempt: %v", err)
		}
		got, err := e.Trial(ctx, nt.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Params["x"] != "fresh" || got.ConfigHash != nt.ConfigHash {
			t.Errorf("stored trial %d: params %v, hash %s; want x=fresh, hash %s", got.ID, got.Params, got.ConfigHash, nt.ConfigHash)
		}
	})
}
