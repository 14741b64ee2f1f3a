package sql

import (
	"context"
	"strings"
	"testing"

	"github.com/benchtune/bench/trial"
)

// On SQLite a trial look-up by configuration (dedup, claims) goes from the
// configuration to its trials through trial_config_idx, not through every
// trial of the experiment.
func TestFindTrialPlanSQLite(t *testing.T) {
	ctx := context.Background()
	s := open(t, sqliteBackend.fresh(t))
	exp := newExperiment(t, s, "e").(*experiment)
	for _, tc := range []struct{ repeat, cond string }{
		{"1", "((t.ts_end IS NULL AND t.stop_requested IS NULL) OR t.status = '" + trial.SUCCEEDED.String() + "')"},
		{"", "t.status = 'SUCCEEDED'"},
	} {
		q, args := exp.findTrialQuery("somehash", tc.repeat, tc.cond)
		rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "\n")
		if !strings.Contains(joined, "SEARCH t USING INDEX trial_config_idx (config_id=?)") {
			t.Errorf("repeat %q: the trials are not found through trial_config_idx:\n%s", tc.repeat, joined)
		}
	}
}
