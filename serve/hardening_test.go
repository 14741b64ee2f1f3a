package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
)

// TestTokenNotLogged: a token a client put in the request path is
// redacted in the server's log line, and a worker's --connect URL with
// user information or a token= query shows neither in its log or its
// error (the requests go to the URL without them).
func TestTokenNotLogged(t *testing.T) {
	var log bytes.Buffer
	hs, _ := newServer(t, time.Second, &log)
	if code := post(t, hs.URL+"/tok-123/v1/register", "", RegisterRequest{Name: "w"}, nil); code != http.StatusUnauthorized {
		t.Errorf("HTTP %d", code)
	}
	if strings.Contains(log.String(), "tok-123") || !strings.Contains(log.String(), "path=/[REDACTED]/v1/register") {
		t.Errorf("server log:\n%s", log.String())
	}
	for in, want := range map[string]string{
		"http://host:7070/v1":                                     "http://host:7070/v1",
		"https://tok-123@host:7070":                               "https://[REDACTED]@host:7070",
		"https://user:tok-123@host:7070/x?token=tok-123&a=1#frag": "https://[REDACTED]@host:7070/x?a=[REDACTED]&token=[REDACTED]",
		"http://[::1]:7070/?tok-123":                              "http://[::1]:7070/?tok-123=[REDACTED]",
		"http://%zz":                                              "[unreadable URL]",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	// A worker whose URL holds the token: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var wlog bytes.Buffer
	_, err = RunWorker(context.Background(), WorkerConfig{URL: "http://secret-user:tok-123@" + addr + "/?token=tok-456", Token: "x",
		Runners: []schedulers.Runner{scoreRunner{1}}, GiveUp: 300 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&wlog, nil))})
	if err == nil {
		t.Fatal("a worker reached a server that does not exist")
	}
	all := wlog.String() + err.Error()
	for _, s := range []string{"secret-user", "tok-123", "tok-456"} {
		if strings.Contains(all, s) {
			t.Errorf("%q reached the worker's log or error:\n%s", s, all)
		}
	}
	if !strings.Contains(all, "[REDACTED]") || !strings.Contains(wlog.String(), "ignored") {
		t.Errorf("worker log and error:\n%s", all)
	}
}

// countingReader produces n bytes without allocating and counts what was
// read of it.
type countingReader struct {
	n, read int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range p[:k] {
		p[i] = ' '
	}
	atomic.AddInt64(&r.read, k)
	return int(k), nil
}

// TestBodyTooLarge: a 100 MB body is refused with 413, by its
// Content-Length before a byte of it is read (the client could send only
// what socket buffers hold, and the process allocated little), and by the
// read's cap when it comes without a length (chunked).
func TestBodyTooLarge(t *testing.T) {
	var log bytes.Buffer
	hs, _ := newServer(t, time.Second, &log)
	for _, path := range []string{"/v1/result", "/v1/register"} {
		body := &countingReader{n: 100 << 20}
		req, _ := http.NewRequest(http.MethodPost, hs.URL+path, body)
		req.ContentLength = body.n
		req.Header.Set("Authorization", "Bearer tok-123")
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		resp, err := http.DefaultClient.Do(req)
		runtime.ReadMemStats(&after)
		if err != nil {
			// The server may close while the client still writes; what
			// matters is that it did not read the body.
			t.Logf("%s: %v", path, err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("%s with Content-Length 100 MB: HTTP %d", path, resp.StatusCode)
			}
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Errorf("%s: %d bytes allocated for a refused body", path, grew)
		}
		if sent := atomic.LoadInt64(&body.read); sent > 32<<20 {
			t.Errorf("%s: the client could send %d bytes of a refused body", path, sent)
		}
	}
	// No length: the read stops at the cap.
	body := &countingReader{n: 100 << 20}
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/v1/register", io.MultiReader(body))
	req.ContentLength = -1
	req.Header.Set("Authorization", "Bearer tok-123")
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked 100 MB: HTTP %d", resp.StatusCode)
		}
	}
	if sent := atomic.LoadInt64(&body.read); sent > 32<<20 {
		t.Errorf("chunked: the client could send %d bytes", sent)
	}
	// A small body is still served.
	var reg RegisterResponse
	if code := post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 1}, &reg); code != 200 {
		t.Errorf("register after: HTTP %d", code)
	}
}

// TestConflictNamesNoOwner: a result for a trial another worker holds is
// refused (409) without naming that worker.
func TestConflictNamesNoOwner(t *testing.T) {
	var log bytes.Buffer
	hs, pool := newServer(t, time.Minute, &log)
	serveTrial(t, pool, 1, "1", nil)
	var a, b RegisterResponse
	post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "alice", Runners: 1}, &a)
	post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "bob", Runners: 1}, &b)
	var c ClaimResponse
	if post(t, hs.URL+"/v1/claim", "tok-123", ClaimRequest{WorkerID: a.WorkerID, RunnerID: 1}, &c); c.Trial == nil {
		t.Fatal("no trial claimed")
	}
	for _, out := range []string{`{"status": "SUCCEEDED", "results": {"score": 1}}`, `{"status": "READY"}`} {
		var e ErrorResponse
		code := post(t, hs.URL+"/v1/result", "tok-123", ResultRequest{WorkerID: b.WorkerID, TrialID: c.Trial.TrialID, Outcome: json.RawMessage(out)}, &e)
		if code != http.StatusConflict || !strings.Contains(e.Error, "not assigned to this worker") {
			t.Errorf("%s: HTTP %d %q", out, code, e.Error)
		}
		if strings.Contains(e.Error, "alice") || strings.Contains(e.Error, a.WorkerID[len(a.WorkerID)-16:]) {
			t.Errorf("the 409 names the owner: %q", e.Error)
		}
	}
}

// TestSilentWorkerStopsCounting: a network worker's slots count as the
// driver's runners only until half the lease after its last heartbeat,
// so a killed worker stops getting trials before its claims run out.
func TestSilentWorkerStopsCounting(t *testing.T) {
	var log bytes.Buffer
	const lease = 2 * time.Second
	hs, pool := newServer(t, lease, &log)
	var reg RegisterResponse
	post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w", Runners: 3}, &reg)
	if n := pool.Available(); n != 3 {
		t.Fatalf("right after registering: %d slots", n)
	}
	// A heartbeat renews it.
	time.Sleep(lease / 4)
	post(t, hs.URL+"/v1/heartbeat", "tok-123", HeartbeatRequest{WorkerID: reg.WorkerID, Runners: 3}, nil)
	beat := time.Now()
	if n := pool.Available(); n != 3 {
		t.Fatalf("after a heartbeat: %d slots", n)
	}
	// Silent since: three quarters of the lease later, well before its
	// lease would run out, it no longer counts.
	time.Sleep(time.Until(beat.Add(3 * lease / 4)))
	if n := pool.Available(); n != 0 {
		t.Errorf("%s after its last heartbeat (lease %s): still %d slots", time.Since(beat).Round(time.Millisecond), lease, n)
	}
	// A worker that says goodbye stops counting at once.
	post(t, hs.URL+"/v1/register", "tok-123", RegisterRequest{Name: "w2", Runners: 2}, &reg)
	post(t, hs.URL+"/v1/bye", "tok-123", ByeRequest{WorkerID: reg.WorkerID}, nil)
	if n := pool.Available(); n != 0 {
		t.Errorf("after bye: %d slots", n)
	}
}

// TestIdleConnectionsShed: with more idle connections open than the
// server allows, a worker with the token is still served at once, and the
// server holds no more than its limit.
func TestIdleConnectionsShed(t *testing.T) {
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: filepath.Join(t.TempDir(), "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	srv, err := New(exp, Config{Token: "t0k", MaxConns: 50, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe(ctx, "127.0.0.1:0", "", "", ready) }()
	addr := <-ready
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	b, _ := json.Marshal(RegisterRequest{Name: "w", Runners: 1})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/register", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer t0k")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the worker was not served: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	if n := srv.limiter.open(); n > 50 {
		t.Errorf("%d connections open, limit 50", n)
	}
	if !strings.Contains(log.String(), "too many open connections") {
		t.Errorf("log:\n%s", log.String())
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Error(err)
	}
}

func TestPlainHTTPWarning(t *testing.T) {
	for addr, warn := range map[string]bool{"127.0.0.1:7070": false, "[::1]:7070": false, "localhost:7070": false,
		":7070": true, "0.0.0.0:7070": true, "10.1.2.3:7070": true, "example.com:80": true} {
		if got := PlainHTTPWarning(addr, false) != ""; got != warn {
			t.Errorf("%s: warning %v, want %v", addr, got, warn)
		}
		if PlainHTTPWarning(addr, true) != "" {
			t.Errorf("%s over TLS: a warning", addr)
		}
	}
	if w := PlainHTTPWarning(":7070", false); !strings.Contains(w, "every address") || !strings.Contains(w, "--tls-cert") {
		t.Errorf("warning %q", w)
	}
}

// TestServerErrorBounded: what a server says in a refusal is quoted in
// the worker's logs and errors at most 1 KiB long.
func TestServerErrorBounded(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusBadRequest, ErrorResponse{Error: strings.Repeat("x", 1<<20)})
	}))
	defer hs.Close()
	c := &client{url: hs.URL, token: "t", http: hs.Client()}
	err := c.call(context.Background(), "/v1/claim", ClaimRequest{}, nil)
	if err == nil || len(err.Error()) > 1200 {
		t.Errorf("a %d-byte error", len(err.Error()))
	}
}
