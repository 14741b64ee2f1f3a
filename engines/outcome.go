package engines

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/benchtune/bench/trial"
)

// wireOutcome is the outcome file's JSON:
//
//	{"status": "SUCCEEDED", "ts": "2026-...Z", "results": {"score": 1.5},
//	 "telemetry": [{"ts": ..., "metric": ..., "value": ...}],
//	 "output": [...], "failure_reason": ""}
type wireOutcome struct {
	Status        string            `json:"status"`
	Ts            time.Time         `json:"ts,omitzero"`
	Results       map[string]any    `json:"results,omitempty"`
	Telemetry     []trial.Telemetry `json:"telemetry,omitempty"`
	Output        []trial.Output    `json:"output,omitempty"`
	FailureReason string            `json:"failure_reason,omitempty"`
	// Signal names the signal that stopped the run on the far side
	// ("SIGTERM"), when one did: see EncodeInterrupted.
	Signal string `json:"signal,omitempty"`
}

// EncodeOutcome returns an outcome's JSON (the outcome file).
func EncodeOutcome(o trial.Outcome) ([]byte, error) {
	return json.Marshal(wireOutcome{Status: o.Status.String(), Ts: o.Ts, Results: o.Results,
		Telemetry: o.Telemetry, Output: o.Output, FailureReason: o.FailureReason})
}

// EncodeInterrupted returns the JSON of an outcome whose run a signal
// stopped (bench exec-trial got SIGTERM or SIGINT). The far side cannot
// tell who sent it: its engine (a time limit, a preemption, a cancel from
// outside) or a person. The driver's engine runner therefore does not take
// such an outcome as final before the engine says how the job ended
// (Interrupted, Runner.result).
func EncodeInterrupted(o trial.Outcome, signal string) ([]byte, error) {
	return json.Marshal(wireOutcome{Status: o.Status.String(), Ts: o.Ts, Results: o.Results,
		Telemetry: o.Telemetry, Output: o.Output, FailureReason: o.FailureReason, Signal: signal})
}

// Interrupted returns the signal an outcome file says stopped its run
// ("" when none did, or the file is not an outcome).
func Interrupted(b []byte) string {
	var w struct {
		Signal string `json:"signal"`
	}
	if json.Unmarshal(b, &w) != nil {
		return ""
	}
	return w.Signal
}

// DecodeOutcome reads an outcome file. Its status must be one a run may
// end with (trial.RunEnd): final, or READY, PENDING or RUNNING, which the
// scheduler stores as it is (as mlos_bench does).
func DecodeOutcome(b []byte) (trial.Outcome, error) {
	var w wireOutcome
	if err := json.Unmarshal(b, &w); err != nil {
		return trial.Outcome{}, fmt.Errorf("outcome file: %w", err)
	}
	st, err := trial.ParseStatus(w.Status)
	if err != nil {
		return trial.Outcome{}, fmt.Errorf("outcome file: %w", err)
	}
	if _, err := trial.RunEnd(st); err != nil {
		return trial.Outcome{}, fmt.Errorf("outcome file: %w", err)
	}
	return trial.Outcome{Status: st, Ts: w.Ts, Results: w.Results, Telemetry: w.Telemetry,
		Output: w.Output, FailureReason: w.FailureReason}, nil
}

// LogTail returns up to the last n bytes of a job's log file ("" when it
// cannot be read): what engines hand back as Result.Log.
func LogTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	off := max(fi.Size()-n, 0)
	b := make([]byte, fi.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return ""
	}
	return string(b)
}
