package engines

import (
	"bytes"
	"testing"
	"time"

	"github.com/benchtune/bench/trial"
)

// requestSeeds are real requests: what the engine runner writes for a job
// (runner.go) and what the engine tests submit, plus near misses.
var requestSeeds = []string{
	`{"experiment_id":"exp-1","trial_id":3,"trial_runner_id":1,"args":["--config","cli.jsonc"],"dir":"/work","params":{"x":"1","mode":"fast"}}`,
	`{"experiment_id":"e","trial_id":1,"trial_runner_id":2,"args":["--config","c.jsonc","--globals","g.jsonc","--gpu_count","2"],"dir":"/home/u/exp","params":{},"globals":{"repeat_i":1,"trial_id":1,"trial_runner_id":2,"tags":["a",1.5,null,true]},"process_env":{"CUDA_VISIBLE_DEVICES":"0"},"telemetry_interval":"500ms","owner":"drv:host:1234"}`,
	`{"experiment_id":"e","trial_id":0,"params":{}}`,
	`{"experiment_id":"","trial_id":1}`,
	`{"experiment_id":"e","trial_id":-1}`,
	`{"experiment_id":"e","trial_id":1e40}`,
	`{"experiment_id":"e","trial_id":"1"}`,
	`{"experiment_id":"e","trial_id":1,"args":null,"params":null,"globals":{"a":{"b":{"c":[]}}}}`,
	`{"experiment_id":"\u00e9\ud800","trial_id":1,"params":{"\u0000":"\xff"}}`,
	`[]`, `null`, `{`, ``,
}

// FuzzDecodeRequest: DecodeRequest never panics, and a request it accepts
// encodes (without the panic Encode keeps for the impossible) to JSON
// that decodes to the same request.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRequest(b)
		if err != nil {
			if r != nil {
				t.Fatalf("error %v with a request", err)
			}
			return
		}
		if r.ExperimentID == "" || r.TrialID <= 0 {
			t.Fatalf("accepted a request without experiment or trial: %+v", r)
		}
		enc := r.Encode()
		r2, err := DecodeRequest(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if enc2 := r2.Encode(); !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the request:\n%s\n%s", enc, enc2)
		}
	})
}

// outcomeSeeds are real outcome files: what bench exec-trial writes
// (EncodeOutcome, EncodeInterrupted) for each way a run ends, plus near
// misses.
func outcomeSeeds(f *testing.F) [][]byte {
	ts := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	out := trial.Outcome{Status: trial.SUCCEEDED, Ts: ts, Results: map[string]any{"score": 1.5, "name": "a", "ok": true},
		Telemetry: []trial.Telemetry{{Ts: ts, Metric: "cpu", Value: 0.25}, {Ts: ts, Metric: "rss", Value: "12"}},
		Output:    []trial.Output{{Phase: "run", Env: "env", Line: 0, Command: "./run.sh", ExitCode: 0, Stdout: "score 1.5\n", Truncated: true}}}
	var seeds [][]byte
	add := func(o trial.Outcome, signal string) {
		var b []byte
		var err error
		if signal == "" {
			b, err = EncodeOutcome(o)
		} else {
			b, err = EncodeInterrupted(o, signal)
		}
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	add(out, "")
	add(trial.Outcome{Status: trial.FAILED, Ts: ts, FailureReason: "run.sh exited 2"}, "")
	add(trial.Outcome{Status: trial.TIMED_OUT, Ts: ts, FailureReason: "trial timeout"}, "")
	add(trial.Outcome{Status: trial.CANCELED, Ts: ts, FailureReason: "run cancelled"}, "SIGTERM")
	add(trial.Outcome{Status: trial.READY}, "")
	add(trial.Outcome{Status: trial.RUNNING}, "SIGINT")
	for _, s := range []string{
		`{"status":"PENDING"}`,
		`{"status":"SUCCEEDED","ts":"2026-11-26T12:00:00+05:30","results":{"score":"3"}}`,
		`{"status":"SUCCEEDED","ts":"9999-12-31T23:59:59-23:59"}`,
		`{"status":"succeeded","results":{"a":{"b":[1,2]}}}`,
		`{"status":"UNKNOWN"}`,
		`{"status":"SUCCEEDED","ts":"yesterday"}`,
		`{"status":"SUCCEEDED","telemetry":[{"ts":"2026-01-01T00:00:00Z","metric":"m","value":null}],"output":[{"exit_code":1e3}]}`,
		`{"status":1}`, `null`, `[]`, `{`, ``,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// FuzzDecodeOutcome: DecodeOutcome and Interrupted never panic; an
// outcome it accepts has a status a run may end with, and encodes to JSON
// that decodes to the same outcome.
func FuzzDecodeOutcome(f *testing.F) {
	for _, s := range outcomeSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sig := Interrupted(b)
		o, err := DecodeOutcome(b)
		if err != nil {
			return
		}
		if _, err := trial.RunEnd(o.Status); err != nil {
			t.Fatalf("accepted status %v: %v", o.Status, err)
		}
		enc, err := EncodeInterrupted(o, sig)
		if err != nil {
			t.Fatalf("encoding a decoded outcome: %v", err)
		}
		o2, err := DecodeOutcome(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		if got := Interrupted(enc); got != sig {
			t.Fatalf("signal %q became %q", sig, got)
		}
		enc2, err := EncodeInterrupted(o2, sig)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the outcome:\n%s\n%s", enc, enc2)
		}
		if o2.Status != o.Status || !o2.Ts.Equal(o.Ts) || o2.FailureReason != o.FailureReason {
			t.Fatalf("round trip changed status, time or reason: %+v, %+v", o, o2)
		}
	})
}
