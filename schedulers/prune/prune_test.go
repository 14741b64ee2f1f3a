package prune

import (
	"math"
	"strings"
	"testing"
)

type rep struct {
	id    int
	step  int64
	value float64
	stop  bool
	done  bool // call Done(id) instead of Report
}

func play(t *testing.T, p Pruner, steps []rep) {
	t.Helper()
	for i, r := range steps {
		if r.done {
			p.Done(r.id)
			continue
		}
		stop, reason := p.Report(r.id, r.step, r.value)
		if stop != r.stop {
			t.Fatalf("report %d (trial %d, step %d, value %g): stop %v, want %v (%s)", i, r.id, r.step, r.value, stop, r.stop, reason)
		}
		if stop && reason == "" {
			t.Fatalf("report %d: stopped without a reason", i)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Median
		reps []rep
	}{
		{"worse than the median is stopped", &Median{}, []rep{
			{id: 1, step: 1, value: 1}, {id: 2, step: 1, value: 3, stop: true}, {id: 3, step: 1, value: 2},
			{id: 4, step: 1, value: 2.5, stop: true}, {id: 5, step: 1, value: 1.5},
		}},
		{"first trial alone goes on", &Median{}, []rep{{id: 1, step: 1, value: 100}}},
		{"steps compare with the same step only", &Median{}, []rep{
			{id: 1, step: 1, value: 1}, {id: 2, step: 2, value: 50}, {id: 2, step: 1, value: 0.5},
		}},
		{"startup trials", &Median{StartupTrials: 2}, []rep{
			{id: 1, step: 1, value: 1}, {id: 1, done: true}, {id: 2, step: 1, value: 9},
			{id: 2, done: true}, {id: 3, step: 1, value: 9, stop: true},
		}},
		{"warmup steps", &Median{WarmupSteps: 3}, []rep{
			{id: 1, step: 2, value: 1}, {id: 1, step: 3, value: 1}, {id: 2, step: 2, value: 5},
			{id: 2, step: 3, value: 5, stop: true},
		}},
		{"min trials", &Median{MinTrials: 2}, []rep{
			{id: 1, step: 1, value: 1}, {id: 2, step: 1, value: 5}, {id: 3, step: 1, value: 5, stop: true},
		}},
		{"NaN is ignored", &Median{}, []rep{
			{id: 1, step: 1, value: 1}, {id: 2, step: 1, value: math.NaN()},
		}},
		{"equal to the median goes on", &Median{}, []rep{
			{id: 1, step: 1, value: 1}, {id: 2, step: 1, value: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { play(t, tc.p, tc.reps) })
	}
}

func TestASHA(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *ASHA
		reps []rep
	}{
		{"rungs never wait to fill: the first trial goes on", &ASHA{MinStep: 1, Eta: 3}, []rep{
			{id: 1, step: 1, value: 5}, {id: 1, step: 3, value: 5}, {id: 1, step: 9, value: 5},
		}},
		{"top 1/eta of the rung go on", &ASHA{MinStep: 1, Eta: 2}, []rep{
			{id: 1, step: 1, value: 5},
			{id: 2, step: 1, value: 6, stop: true}, // 2 at the rung: keep 1, it ranks 2
			{id: 3, step: 1, value: 1},             // best
			{id: 4, step: 1, value: 4},             // 4 at the rung: keep 2, it ranks 2
			{id: 5, step: 1, value: 4.5, stop: true},
		}},
		{"steps between rungs are not judged", &ASHA{MinStep: 2, Eta: 3}, []rep{
			{id: 1, step: 1, value: 1}, {id: 2, step: 1, value: 9}, {id: 1, step: 2, value: 1},
			{id: 2, step: 2, value: 9, stop: true},
		}},
		{"a step past several rungs records each", &ASHA{MinStep: 1, Eta: 2}, []rep{
			{id: 1, step: 4, value: 1}, // rungs 1, 2, 4
			{id: 2, step: 2, value: 3, stop: true},
		}},
		{"a second rung judges against its own arrivals", &ASHA{MinStep: 1, Eta: 2}, []rep{
			{id: 1, step: 1, value: 3}, {id: 2, step: 1, value: 1}, {id: 3, step: 1, value: 2, stop: true},
			{id: 4, step: 1, value: 0.5},
			{id: 2, step: 2, value: 1}, // alone at rung 1
			{id: 4, step: 2, value: 2, stop: true},
		}},
		{"max step has no rung", &ASHA{MinStep: 1, Eta: 2, MaxStep: 2}, []rep{
			{id: 1, step: 1, value: 1}, {id: 1, step: 2, value: 1}, {id: 2, step: 1, value: 0},
			{id: 2, step: 2, value: 9},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { play(t, tc.p, tc.reps) })
	}
}

func TestASHARungs(t *testing.T) {
	a := &ASHA{MinStep: 2, Eta: 3}
	for k, want := range []int64{2, 6, 18, 54} {
		if got := a.Rung(k); got != want {
			t.Errorf("rung %d = %d, want %d", k, got, want)
		}
	}
	if got := (&ASHA{}).Rung(1); got != 3 {
		t.Errorf("default rung 1 = %d, want 3 (min step 1, eta 3)", got)
	}
}

func TestReasonAndSign(t *testing.T) {
	m := &Median{}
	m.Report(1, 1, 1)
	_, reason := m.Report(2, 1, 2)
	if !strings.Contains(reason, "median 1") || !strings.Contains(reason, "step 1") {
		t.Errorf("reason %q", reason)
	}
	if Sign(2, true) != -2 || Sign(2, false) != 2 {
		t.Error("Sign")
	}
}

// A maximised metric is judged on Sign's negated values, but the reason
// shows the value as measured.
func TestReasonShowsMaximisedValueAsMeasured(t *testing.T) {
	a := &ASHA{MinStep: 1, Eta: 2, Maximize: true}
	a.Report(1, 1, Sign(1900, true))
	stop, reason := a.Report(2, 1, Sign(1500, true))
	if !stop || !strings.Contains(reason, "value 1500 ") {
		t.Fatalf("stop %v, reason %q: want the value 1500 as measured", stop, reason)
	}
	m := &Median{Maximize: true}
	m.Report(1, 1, Sign(1900, true))
	m.Done(1)
	stop, reason = m.Report(2, 1, Sign(1500, true))
	if !stop || !strings.Contains(reason, "value 1500 ") || !strings.Contains(reason, "median 1900 ") {
		t.Fatalf("stop %v, reason %q: want 1500 and the median 1900 as measured", stop, reason)
	}
}
