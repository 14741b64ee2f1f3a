package sql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/google/go-cmp/cmp"
)

// Notes added to an open experiment are stored; one added again moves to
// the end, so the last end reason is the one storage.EndReason returns.
func TestAddNotes(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		s := open(t, b.fresh(t))
		objs := []storage.Objective{{Name: "score", Direction: "min"}}
		exp, _, err := s.Experiment(ctx, storage.ExperimentInfo{ID: "n", Objectives: objs, Notes: []string{"insecure ssh"}})
		if err != nil {
			t.Fatal(err)
		}
		// Through the redacting view bench run uses, secrets are masked.
		na := storage.Redacting(exp, upperRedactor{}).WithOwner("me", time.Minute).(storage.NoteAdder)
		for _, n := range []string{storage.EndReasonPrefix + "max_time 1s reached", storage.EndReasonPrefix + "converged", storage.EndReasonPrefix + "max_time 1s reached"} {
			if err := na.AddNotes(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		again, err := s.LoadExperiment(ctx, "n")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"insecure ssh", storage.EndReasonPrefix + "CONVERGED", storage.EndReasonPrefix + "max_time 1s reached"}
		if diff := cmp.Diff(want, again.Info().Notes); diff != "" {
			t.Errorf("notes (-want +got):\n%s", diff)
		}
		if r := storage.EndReason(again.Info().Notes); r != "max_time 1s reached" {
			t.Errorf("end reason %q", r)
		}
	})
}

// upperRedactor "redacts" the word converged by upper-casing it.
type upperRedactor struct{}

func (upperRedactor) Redact(s string) string         { return strings.ReplaceAll(s, "converged", "CONVERGED") }
func (upperRedactor) RedactValue(_, v string) string { return v }
