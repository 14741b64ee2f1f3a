package engines

import "testing"

// TestSameTrial: a restarted driver's request for the same trial is the
// same trial whatever its claim, runner, launcher arguments, device slot
// and telemetry interval; other values, another trial, experiment or
// folder are another trial. SubmitName agrees.
func TestSameTrial(t *testing.T) {
	args := []string{"--environment", "env.jsonc", "--experiment_id", "E"}
	req := func(edit func(*Request)) []byte {
		r := Request{ExperimentID: "E", TrialID: 4, RunnerID: 3, Args: args, Dir: "/work/exp",
			Params: map[string]string{"x": "1", "mode": "a"}, Owner: "driver-1",
			Globals: map[string]any{"trial_runner_id": 3, "fidelity": "low"}}
		// The slices and maps are fresh per call: edits do not leak.
		r.Args = append([]string(nil), args...)
		if edit != nil {
			edit(&r)
		}
		return r.Encode()
	}
	base := req(nil)
	same := map[string][]byte{
		"itself":       base,
		"owner":        req(func(r *Request) { r.Owner = "driver-2" }),
		"runner":       req(func(r *Request) { r.RunnerID = 1; r.Globals = map[string]any{"trial_runner_id": 1, "fidelity": "low"} }),
		"args":         req(func(r *Request) { r.Args = append(r.Args, "--log_level", "INFO") }),
		"device slot":  req(func(r *Request) { r.ProcessEnv = map[string]string{"CUDA_VISIBLE_DEVICES": "1"} }),
		"telemetry":    req(func(r *Request) { r.TelemetryInterval = "1s" }),
		"key order":    []byte(`{"params": {"mode": "a", "x": "1"}, "dir": "/work/exp", "trial_id": 4, "experiment_id": "E"}`),
		"extra fields": []byte(`{"experiment_id": "E", "trial_id": 4, "dir": "/work/exp", "params": {"x": "1", "mode": "a"}, "new_field": 1}`),
	}
	for name, b := range same {
		if !SameTrial(base, b) || !SameTrial(b, base) {
			t.Errorf("%s: %s and %s: want the same trial", name, base, b)
		}
		if SubmitName(Job{Name: "j", Request: base}) != SubmitName(Job{Name: "j", Request: b}) {
			t.Errorf("%s: SubmitName differs", name)
		}
	}
	other := map[string][]byte{
		"values":       req(func(r *Request) { r.Params = map[string]string{"x": "2", "mode": "a"} }),
		"fewer values": req(func(r *Request) { r.Params = map[string]string{"x": "1"} }),
		"trial":        req(func(r *Request) { r.TrialID = 5 }),
		"experiment":   req(func(r *Request) { r.ExperimentID = "F" }),
		"folder":       req(func(r *Request) { r.Dir = "/elsewhere" }),
		"not json":     []byte(`not json`),
		"empty":        nil,
	}
	for name, b := range other {
		if SameTrial(base, b) || SameTrial(b, base) {
			t.Errorf("%s: %s and %s: want another trial", name, base, b)
		}
	}
	if SameTrial([]byte(`x`), []byte(`x`)) {
		t.Error("two unreadable requests: want no trial")
	}
}
