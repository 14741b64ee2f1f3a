package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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

// fuzzRoutes are the POST routes whose bodies FuzzServeBodies sends.
var fuzzRoutes = []string{"/v1/register", "/v1/claim", "/v1/heartbeat", "/v1/result", "/v1/bye", "/v1/progress"}

// FuzzServeBodies posts arbitrary bodies to each route of a real server
// (SQLite storage, one registered worker holding a claimed trial), through
// ServeHTTP as a client's request goes: the server never panics, answers
// every body with a JSON response of a status a client expects (never 500
// for a bad body), and its answer stays bounded. "$W" in a body stands for
// the registered worker's id, so that bodies get past the id check.
func FuzzServeBodies(f *testing.F) {
	seeds := []struct {
		route int
		body  string
	}{
		{0, `{"name":"gpu-box-1","runners":4}`},
		{0, `{"name":"../../etc/passwd\u0000` + strings.Repeat("x", 100) + `","runners":-3}`},
		{0, `{"name":"w","runners":1,"extra":true}`},
		{1, `{"worker_id":"$W","runner_id":1}`},
		{1, `{"worker_id":"net:w:0123456789abcdef","runner_id":-1}`},
		{1, `{"worker_id":"$W","runner_id":99999999999}`},
		{2, `{"worker_id":"$W","runners":2,"trials":[1,2,1,-5]}`},
		{2, `{"worker_id":"$W","runners":1,"trials":null}`},
		{3, `{"worker_id":"$W","trial_id":1,"outcome":{"status":"SUCCEEDED","ts":"2026-11-26T12:00:00Z","results":{"score":1.5},"output":[{"phase":"run","env":"e","line":0,"command":"./run.sh","exit_code":0,"stdout":"ok\n","stderr":""}]}}`},
		{3, `{"worker_id":"$W","trial_id":1,"outcome":{"status":"READY"}}`},
		{3, `{"worker_id":"$W","trial_id":1,"outcome":{"status":"FAILED","failure_reason":"` + strings.Repeat("r", 5000) + `"}}`},
		{3, `{"worker_id":"$W","trial_id":2,"outcome":"SUCCEEDED"}`},
		{3, `{"worker_id":"$W","trial_id":1,"outcome":{"status":"PENDING","telemetry":[{"ts":"2026-11-26T12:00:00Z","metric":"m","value":{}}]}}`},
		{4, `{"worker_id":"$W"}`},
		{4, `{}`},
		{2, `{"worker_id":"$W"} {"worker_id":"x"}`},
		{1, `null`}, {2, `[]`}, {3, `{`}, {4, ``}, {0, `"\ud800"`},
		{5, `{"worker_id":"$W","trial_id":1,"progress":[{"step":1,"values":{"loss":0.5}},{"step":2,"ts":"2026-11-26T12:00:00Z","values":{"loss":0.25,"phase":"warm"}}]}`},
		{5, `{"worker_id":"$W","trial_id":1,"progress":[{"step":-1,"values":null}]}`},
		{5, `{"worker_id":"$W","trial_id":7,"progress":[]}`},
		{5, `{"worker_id":"$W","trial_id":1,"progress":{"step":1}}`},
	}
	for _, s := range seeds {
		f.Add(uint8(s.route), []byte(s.body))
	}

	ctx := context.Background()
	st, err := storage.Open(ctx, storage.Config{DriverName: "sqlite", Database: filepath.Join(f.TempDir(), "db.sqlite")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e",
		Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		f.Fatal(err)
	}
	// Two trials the driver's runners offer (nobody waits on their Run
	// here: an outcome is kept in the offer's buffer).
	pool := NewPool(time.Hour, nil, nil)
	for i, x := range []string{"1", "2"} {
		pool.offer(schedulers.Spec{ExperimentID: "e", TrialID: i + 1, Params: map[string]string{"x": x},
			Progress: func(trial.Progress) {}})
	}
	srv, err := New(exp, Config{Token: "tok", Pool: pool, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	srv.claimWait = 0 // a claim without a trial is answered at once
	do := func(path string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec
	}
	rec := do("/v1/register", []byte(`{"name":"w","runners":1}`))
	var reg RegisterResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &reg); err != nil || rec.Code != http.StatusOK {
		f.Fatalf("register: HTTP %d %s", rec.Code, rec.Body)
	}
	if rec := do("/v1/claim", []byte(`{"worker_id":"`+reg.WorkerID+`","runner_id":1}`)); rec.Code != http.StatusOK {
		f.Fatalf("claim: HTTP %d %s", rec.Code, rec.Body)
	}

	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		body = bytes.ReplaceAll(body, []byte("$W"), []byte(reg.WorkerID))
		rec := do(path, body)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s %q: HTTP %d %s", path, body, rec.Code, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: the answer is not JSON: %q", path, body, rec.Body)
		}
		// Bounded: an error says at most a few hundred bytes whatever it
		// was sent; a heartbeat lists no more trials than it was asked
		// about.
		if limit := 2*len(body) + 1024; rec.Body.Len() > limit {
			t.Fatalf("%s: an answer of %d bytes to a body of %d", path, rec.Body.Len(), len(body))
		}
		if rec.Code != http.StatusOK {
			var e ErrorResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" || len(e.Error) > 1024 {
				t.Fatalf("%s %q: refusal %q is not a short error", path, body, rec.Body)
			}
		}
	})
}
