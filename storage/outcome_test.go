package storage

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/trial"
)

func TestStoredOutcome(t *testing.T) {
	end := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tel := []Telemetry{{Ts: end, Metric: "cpu", Value: 0.5}}
	outp := []Output{{Phase: "run", Command: "x", Stdout: "hi"}}
	tests := []struct {
		name string
		got  trial.Outcome
		want trial.Outcome
	}{
		{"summary: no telemetry",
			Trial{Status: trial.SUCCEEDED, TsEnd: end, Results: Metrics{"score": 1.0}, Owner: "x"}.Outcome(),
			trial.Outcome{Status: trial.SUCCEEDED, Ts: end, Results: map[string]any{"score": 1.0}}},
		{"failed: the reason",
			Trial{Status: trial.FAILED, TsEnd: end, FailureReason: "boom"}.Outcome(),
			trial.Outcome{Status: trial.FAILED, Ts: end, FailureReason: "boom"}},
		{"detail: telemetry and output",
			TrialDetail{Trial: Trial{Status: trial.TIMED_OUT, TsEnd: end, FailureReason: "hung"}, Telemetry: tel, Output: outp}.Outcome(),
			trial.Outcome{Status: trial.TIMED_OUT, Ts: end, FailureReason: "hung", Telemetry: tel, Output: outp}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
