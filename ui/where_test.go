package ui

import (
	"testing"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// TestWhereRanDevice: the device slot a succeeded trial recorded
// (schedulers.DeviceSlotResult, DeviceGPUResult) is a column of "where
// trials ran"; a trial without it is grouped apart.
func TestWhereRanDevice(t *testing.T) {
	trials := []storage.Trial{
		{ID: 1, TrialRunnerID: 1, Status: trial.SUCCEEDED, Results: storage.Metrics{schedulers.DeviceSlotResult: 0.0, schedulers.DeviceGPUResult: "7"}},
		{ID: 2, TrialRunnerID: 1, Status: trial.SUCCEEDED, Results: storage.Metrics{schedulers.DeviceSlotResult: 1.0, schedulers.DeviceGPUResult: "9"}},
		{ID: 3, TrialRunnerID: 1, Status: trial.SUCCEEDED, Results: storage.Metrics{schedulers.DeviceSlotResult: 0.0, schedulers.DeviceGPUResult: "7"}},
		{ID: 4, TrialRunnerID: 1, Status: trial.FAILED},
	}
	got := whereRan(trials)
	want := map[string]int{"": 1, "slot 0, GPU 7": 2, "slot 1, GPU 9": 1}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want devices %v", got, want)
	}
	for _, r := range got {
		if want[r.Device] != r.N {
			t.Errorf("device %q: %d trials, want %d (%+v)", r.Device, r.N, want[r.Device], got)
		}
	}
}
