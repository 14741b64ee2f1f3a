package serve

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/benchtune/bench/trial"
)

// A worker's heartbeat answers which of its trials it still holds: a
// trial whose Run the driver cancelled (bench stop) is not among them, so
// the worker stops it; the trials it still runs untouched stay. The
// cancelled Run returns CANCELED with the cause as its reason at once.
func TestHeartbeatDropsStoppedTrials(t *testing.T) {
	var log bytes.Buffer
	hs, pool := newServer(t, time.Minute, &log)
	one := serveTrial(t, pool, 1, "1", nil)
	serveTrial(t, pool, 2, "2", nil)
	var reg RegisterResponse
	if code := post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 2}, &reg); code != 200 {
		t.Fatalf("register: HTTP %d", code)
	}
	for runner, want := range []int{1, 2} {
		var c ClaimResponse
		if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: reg.WorkerID, RunnerID: runner + 1}, &c); c.Trial == nil || c.Trial.TrialID != want {
			t.Fatalf("claim %d: %+v", want, c)
		}
	}
	var hb HeartbeatResponse
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: reg.WorkerID, Runners: 2, Trials: []int{1, 2}}, &hb); !slices.Equal(hb.Held, []int{1, 2}) {
		t.Fatalf("heartbeat before the stop: %+v", hb)
	}
	one.cancel(errors.New("stopped on request (bench stop)"))
	if out := one.outcome(t); out.Status != trial.CANCELED || out.FailureReason != "stopped on request (bench stop)" {
		t.Errorf("the stopped trial's Run: %s %q", out.Status, out.FailureReason)
	}
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: reg.WorkerID, Runners: 2, Trials: []int{1, 2}}, &hb); !slices.Equal(hb.Held, []int{2}) {
		t.Errorf("heartbeat after bench stop of trial 1: held %v, want [2]", hb.Held)
	}
}
