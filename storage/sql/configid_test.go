package sql

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfigIDsAsMlosBench: 15 configurations run 3 times each get config
// ids 1..15, as mlos_bench gives them (an insert of a stored hash used to
// burn an id of the autoincrement: 1, 4, 7, ...).
func TestConfigIDsAsMlosBench(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		s := open(t, b.fresh(t))
		exp := newExperiment(t, s, "e")
		var got, want []int64
		for c := 1; c <= 15; c++ {
			for repeat := 1; repeat <= 3; repeat++ {
				tr := mustTrial(t, exp, map[string]string{"x": strconv.Itoa(c)})
				if repeat == 1 {
					got = append(got, tr.ConfigID)
					want = append(want, int64(c))
				}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("config ids (-want +got):\n%s", diff)
		}
	})
}
