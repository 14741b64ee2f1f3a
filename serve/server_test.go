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

	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/trial"
)

func newServer(t *testing.T, lease time.Duration, log *bytes.Buffer) (*httptest.Server, storage.Experiment) {
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
	srv, err := New(exp, Config{Token: "tok-123", Lease: lease, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs, exp
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
// once the lease ran out, worker B claims the same trial. A's late result
// is rejected (409) and B's is stored; a result missing the target is
// stored FAILED.
func TestStaleResult(t *testing.T) {
	var log bytes.Buffer
	hs, exp := newServer(t, 300*time.Millisecond, &log)
	ctx := context.Background()
	if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "2"}}); err != nil {
		t.Fatal(err)
	}
	reg := func() string {
		var r RegisterResponse
		if code := post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 1}, &r); code != 200 {
			t.Fatalf("register: HTTP %d", code)
		}
		return r.WorkerID
	}
	a, b := reg(), reg()
	var ca ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: a, RunnerID: 1}, &ca); ca.Trial == nil || ca.Trial.TrialID != 1 {
		t.Fatalf("A's claim: %+v", ca)
	}
	// A heartbeat keeps it; B gets the other trial meanwhile.
	var hb HeartbeatResponse
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: a, Runners: 1, Trials: []int{1}}, &hb); len(hb.Held) != 1 {
		t.Fatalf("heartbeat: %+v", hb)
	}
	var cb ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: b, RunnerID: 1}, &cb); cb.Trial == nil || cb.Trial.TrialID != 2 {
		t.Fatalf("B's first claim: %+v", cb)
	}
	time.Sleep(500 * time.Millisecond) // A's lease runs out
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: b, RunnerID: 1}, &cb); cb.Trial == nil || cb.Trial.TrialID != 1 {
		t.Fatalf("B's second claim: %+v", cb)
	}
	if post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: a, Runners: 1, Trials: []int{1}}, &hb); len(hb.Held) != 0 {
		t.Errorf("A still holds the trial: %+v", hb)
	}
	good := json.RawMessage(`{"status": "SUCCEEDED", "results": {"score": 5}}`)
	var e ErrorResponse
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: a, TrialID: 1, Outcome: good}, &e); code != http.StatusConflict {
		t.Fatalf("A's stale result: HTTP %d %v", code, e)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 1, Outcome: good}, nil); code != 200 {
		t.Fatalf("B's result: HTTP %d", code)
	}
	missing := json.RawMessage(`{"status": "SUCCEEDED", "results": {"other": 5}}`)
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: missing}, nil); code != 200 {
		t.Fatalf("B's result without the target: HTTP %d", code)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: json.RawMessage(`{"status": "UNKNOWN"}`)}, nil); code != http.StatusBadRequest {
		t.Errorf("a status no run ends with: HTTP %d", code)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: json.RawMessage(`{"status": "RUNNING"}`)}, nil); code != http.StatusConflict {
		t.Errorf("RUNNING (unfinished, as READY) for a finished trial: HTTP %d", code)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 2, Outcome: json.RawMessage(`{"status": "READY"}`)}, nil); code != http.StatusConflict {
		t.Errorf("READY for a finished trial: HTTP %d", code)
	}
	trials, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if trials[0].Status != trial.SUCCEEDED || trials[0].Results["score"] != 5.0 {
		t.Errorf("trial 1: %s %v", trials[0].Status, trials[0].Results)
	}
	if trials[1].Status != trial.FAILED || !strings.Contains(trials[1].FailureReason, "score") {
		t.Errorf("trial 2: %s %q", trials[1].Status, trials[1].FailureReason)
	}
	// A run that ended READY (a NetworkEnv alone): stored as is, unfinished
	// and without results, as in mlos_bench.
	if _, err := exp.NewTrial(ctx, storage.TrialSpec{Params: map[string]string{"x": "3"}}); err != nil {
		t.Fatal(err)
	}
	var c3 ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: b, RunnerID: 1}, &c3); c3.Trial == nil || c3.Trial.TrialID != 3 {
		t.Fatalf("B's third claim: %+v", c3)
	}
	if code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b, TrialID: 3, Outcome: json.RawMessage(`{"status": "READY"}`)}, nil); code != 200 {
		t.Fatalf("READY: HTTP %d", code)
	}
	t3, err := exp.Trial(ctx, 3)
	if err != nil || t3.Status != trial.READY || len(t3.Results) != 0 {
		t.Errorf("trial 3: %+v %v", t3, err)
	}
}
