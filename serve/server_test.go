package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/trial"
)

func newServer(t *testing.T, lease time.Duration, log *bytes.Buffer) (*httptest.Server, *Pool) {
	t.Helper()
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: filepath.Join(t.TempDir(), "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	exp, _, err := st.Experiment(context.Background(), storage.ExperimentInfo{ID: "e",
		Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(log, nil))
	pool := NewPool(lease, map[string]any{"experiment_id": "e"}, logger)
	srv, err := New(exp, Config{Token: "tok-123", Pool: pool, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs, pool
}

// served is a trial the driver's dispatcher runs on a RemoteRunner of the
// pool: offered at once, its Run waiting in a goroutine.
type served struct {
	out    chan trial.Outcome
	cancel context.CancelCauseFunc
}

func serveTrial(t *testing.T, pool *Pool, trialID int, x string, progress func(trial.Progress)) *served {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	spec := schedulers.Spec{ExperimentID: "e", TrialID: trialID, Params: map[string]string{"x": x},
		Globals:  trial.Globals(map[string]any{"experiment_id": "e"}, map[string]string{"repeat_i": "1"}, nil, "e", trialID, 1000+trialID),
		Progress: progress}
	r := pool.Runner(1000 + trialID).(*RemoteRunner)
	o := pool.offer(spec)
	s := &served{out: make(chan trial.Outcome, 1), cancel: cancel}
	go func() { s.out <- r.wait(ctx, o, spec) }()
	return s
}

// outcome waits for the trial's Run to return.
func (s *served) outcome(t *testing.T) trial.Outcome {
	t.Helper()
	select {
	case o := <-s.out:
		return o
	case <-time.After(2 * time.Minute):
		t.Fatal("the served trial's Run did not return")
		return trial.Outcome{}
	}
}

func post(t *testing.T, url, token string, in, out any) int {
	t.Helper()
	b, _ := json.Marshal(in)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// TestWrongToken: a request without the token, or with a wrong one, is
// refused (401) and logged, and the token never appears in the log.
func TestWrongToken(t *testing.T) {
	var log bytes.Buffer
	hs, _ := newServer(t, time.Second, &log)
	for _, tok := range []string{"", "wrong-token", "tok-12"} {
		var e ErrorResponse
		if code := post(t, hs.URL+"/v1/register", tok, RegisterRequest{Name: "w", Runners: 1}, &e); code != http.StatusUnauthorized {
			t.Errorf("token %q: HTTP %d", tok, code)
		}
		if !strings.Contains(e.Error, "access token") {
			t.Errorf("error %q", e.Error)
		}
	}
	if c := strings.Count(log.String(), "refused a request"); c != 3 {
		t.Errorf("%d refusals logged:\n%s", c, log.String())
	}
	if strings.Contains(log.String(), "tok-123") || strings.Contains(log.String(), "wrong-token") {
		t.Errorf("a token reached the log:\n%s", log.String())
	}
	var reg RegisterResponse
	if code := post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 1}, &reg); code != 200 || reg.WorkerID == "" {
		t.Fatalf("register: HTTP %d %+v", code, reg)
	}
	if code := post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: "net:forged"}, nil); code != http.StatusBadRequest {
		t.Errorf("a malformed worker id: HTTP %d", code)
	}
}

// TestStaleResult: worker A claims a trial and stops renewing its lease;
// once the lease ran out, the driver-side Run returns FAILED naming the
// lost worker (the retry policy's to handle), and A's late result is
// rejected (409). Worker B's result for the next trial is what that Run
// returns; a status no run ends with is refused (400), and a result for a
// trial B does not hold is refused (409).
func TestStaleResult(t *testing.T) {
	var log bytes.Buffer
	hs, pool := newServer(t, 2*time.Second, &log)
	reg := func() string {
		var r RegisterResponse
		if code := post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 1}, &r); code != 200 {
			t.Fatalf("register: HTTP %d", code)
		}
		return r.WorkerID
	}
	a, b := reg(), reg()
	first := serveTrial(t, pool, 1, "1", nil)
	var ca ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: a, RunnerID: 1}, &ca); ca.Trial == nil || ca.Trial.TrialID != 1 || ca.Trial.Params["x"] != "1" || ca.Trial.Metadata["repeat_i"] != "1" {
		t.Fatalf("A's claim: %+v", ca)
	}
	// A heartbeat keeps it.
	var hb HeartbeatResponse
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: a, Runners: 1, Trials: []int{1}}, &hb); len(hb.Held) != 1 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	// A goes silent: its lease runs out and Run returns.
	out := first.outcome(t)
	if out.Status != trial.FAILED || !strings.Contains(out.FailureReason, "worker lost") || !strings.Contains(out.FailureReason, a) {
		t.Fatalf("the lost worker's trial: %s %q", out.Status, out.FailureReason)
	}
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: a, Runners: 1, Trials: []int{1}}, &hb); len(hb.Held) != 0 {
		t.Errorf("A still holds the trial: %+v", hb)
	}
	good := json.RawMessage(`{"status": "SUCCEEDED", "results": {"score": 5}}`)
	var e ErrorResponse
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: a, TrialID: 1, Outcome: good}, &e); code != http.StatusConflict {
		t.Fatalf("A's stale result: HTTP %d %v", code, e)
	}
	// The retry (a new trial) goes to B.
	second := serveTrial(t, pool, 2, "1", nil)
	var cb ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: b, RunnerID: 1}, &cb); cb.Trial == nil || cb.Trial.TrialID != 2 {
		t.Fatalf("B's claim: %+v", cb)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: json.RawMessage(`{"status": "UNKNOWN"}`)}, nil); code != http.StatusBadRequest {
		t.Errorf("a status no run ends with: HTTP %d", code)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 1, Outcome: json.RawMessage(`{"status": "READY"}`)}, nil); code != http.StatusConflict {
		t.Errorf("READY for a trial B does not hold: HTTP %d", code)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: good}, nil); code != 200 {
		t.Fatalf("B's result: HTTP %d", code)
	}
	if out := second.outcome(t); out.Status != trial.SUCCEEDED || out.Results["score"] != 5.0 {
		t.Errorf("B's trial: %s %v", out.Status, out.Results)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: good}, nil); code != http.StatusConflict {
		t.Errorf("a second result for the same trial: HTTP %d", code)
	}
	// A run that ended READY (a NetworkEnv alone) is handed to the driver
	// as it is: its dispatcher stores it unfinished (trial.RunEnd).
	third := serveTrial(t, pool, 3, "3", nil)
	var c3 ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: b, RunnerID: 1}, &c3); c3.Trial == nil || c3.Trial.TrialID != 3 {
		t.Fatalf("B's third claim: %+v", c3)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 3, Outcome: json.RawMessage(`{"status": "READY"}`)}, nil); code != 200 {
		t.Fatalf("READY: HTTP %d", code)
	}
	if out := third.outcome(t); out.Status != trial.READY {
		t.Errorf("trial 3: %s", out.Status)
	}
}
