package serve

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
)

// A worker's heartbeat answers which of its trials it still holds: a
// trial with a stop request (bench stop) is not among them, so the worker
// stops it; the trials it still runs untouched stay.
func TestHeartbeatDropsStoppedTrials(t *testing.T) {
	var log bytes.Buffer
	hs, exp := newServer(t, time.Minute, &log)
	ctx := context.Background()
	for _, x := range []string{"1", "2"} {
		if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": x}}); err != nil {
			t.Fatal(err)
		}
	}
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
	if err := exp.RequestStop(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: reg.WorkerID, Runners: 2, Trials: []int{1, 2}}, &hb); !slices.Equal(hb.Held, []int{2}) {
		t.Errorf("heartbeat after bench stop of trial 1: held %v, want [2]", hb.Held)
	}
}
