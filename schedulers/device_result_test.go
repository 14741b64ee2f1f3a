package schedulers

import (
	"testing"

	"github.com/benchtune/bench/trial"
)

func TestRecordDevice(t *testing.T) {
	out := trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": 1.0}}
	recordDevice(&out, map[string]any{"device_slot": int64(2), "gpu_id": "3,4"})
	if out.Results[DeviceSlotResult] != 2.0 || out.Results[DeviceGPUResult] != "3,4" || out.Results["score"] != 1.0 {
		t.Errorf("results %v", out.Results)
	}
	// The environment's own value wins; no slot, nothing added.
	out = trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{DeviceSlotResult: 9.0}}
	recordDevice(&out, map[string]any{"device_slot": int64(2)})
	if out.Results[DeviceSlotResult] != 9.0 || len(out.Results) != 1 {
		t.Errorf("results %v", out.Results)
	}
	out = trial.Outcome{Status: trial.SUCCEEDED}
	recordDevice(&out, map[string]any{"experiment_id": "x"})
	if out.Results != nil {
		t.Errorf("no slot: results %v", out.Results)
	}
}
