// Package serve lets bench workers on other machines run an experiment's
// trials without database credentials (lorien's RPC job manager): bench
// serve answers their requests over HTTP with JSON, and acts on the
// experiment's storage for them with the same claims and leases that bench
// processes sharing a database use.
//
// Every request carries the access token (Authorization: Bearer ...). A
// worker registers, then claims trials one at a time, renews its leases
// with heartbeats, and posts each trial's outcome. A worker that stops
// renewing loses its trials when their lease runs out: they go back to the
// queue, and a result it posts later is rejected (409). The server keeps no
// state of its own: a restarted server serves the same workers on.
package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Protocol messages (POST, JSON bodies).
type (
	// RegisterRequest: POST /v1/register.
	RegisterRequest struct {
		Name    string `json:"name"`
		Runners int    `json:"runners"`
	}
	// RegisterResponse tells the worker its id and the lease.
	RegisterResponse struct {
		WorkerID     string `json:"worker_id"`
		ExperimentID string `json:"experiment_id"`
		LeaseMS      int64  `json:"lease_ms"`
	}
	// ClaimRequest: POST /v1/claim, for one of the worker's runners. The
	// server answers as soon as a trial is offered, or with none after a
	// few seconds (a long poll).
	ClaimRequest struct {
		WorkerID string `json:"worker_id"`
		RunnerID int    `json:"runner_id"`
	}
	// ClaimResponse holds the assigned trial (nil: none now) and whether
	// the experiment is over (the worker may exit).
	ClaimResponse struct {
		Trial    *Assignment `json:"trial,omitempty"`
		Finished bool        `json:"finished"`
	}
	// Assignment is a trial to run.
	Assignment struct {
		TrialID int               `json:"trial_id"`
		Params  map[string]string `json:"params"`
		// Metadata are the trial's stored metadata (repeat_i, ...): globals
		// of the trial.
		Metadata map[string]string `json:"metadata,omitempty"`
	}
	// HeartbeatRequest: POST /v1/heartbeat renews the worker's leases.
	HeartbeatRequest struct {
		WorkerID string `json:"worker_id"`
		Runners  int    `json:"runners"`
		Trials   []int  `json:"trials"`
	}
	// HeartbeatResponse lists which of the trials the worker named it
	// still holds: it stops the others.
	HeartbeatResponse struct {
		Held []int `json:"held"`
	}
	// ResultRequest: POST /v1/result stores a trial's outcome (the
	// engines outcome JSON).
	ResultRequest struct {
		WorkerID string          `json:"worker_id"`
		TrialID  int             `json:"trial_id"`
		Outcome  json.RawMessage `json:"outcome"`
	}
	// ProgressRequest: POST /v1/progress relays a running trial's
	// intermediate results (in step order) to the driver. Added in
	// protocol 1 without a version change: a server without it answers
	// 404, and the worker then stops posting progress.
	ProgressRequest struct {
		WorkerID string           `json:"worker_id"`
		TrialID  int              `json:"trial_id"`
		Progress []trial.Progress `json:"progress"`
	}
	// ByeRequest: POST /v1/bye hands the worker's unfinished trials back.
	ByeRequest struct {
		WorkerID string `json:"worker_id"`
	}
	// ErrorResponse is the body of every refusal.
	ErrorResponse struct {
		Error string `json:"error"`
	}
)

// Config configures a server.
type Config struct {
	// Token is the access token every request must carry.
	Token string
	// Lease is how long a worker's claim on a trial lasts without a
	// heartbeat (default 30s).
	Lease time.Duration
	// Pool is the transport the driver's dispatcher runs trials through
	// (its RemoteRunners); nil: New makes one (NewPool with Lease).
	Pool   *Pool
	Logger *slog.Logger
	// MaxConns bounds the open connections (0: DefaultMaxConns). Past it,
	// the connections that wait longest without a request in progress
	// are closed (see ListenAndServe).
	MaxConns int
}

// Server serves one experiment.
type Server struct {
	expID string
	pool  *Pool
	cfg   Config
	log   *slog.Logger
	mux   *http.ServeMux
	// limiter bounds the open connections (ListenAndServe).
	limiter *connLimiter
	// claimWait is how long a claim waits for a trial (a long poll).
	claimWait time.Duration
}

// New returns a server of exp's trials: those the driver runs on cfg.Pool's
// runners (Pool, schedulers.Scheduler.UseRemote).
func New(exp storage.Experiment, cfg Config) (*Server, error) {
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("serve: an access token is required")
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Pool == nil {
		cfg.Pool = NewPool(cfg.Lease, nil, cfg.Logger)
	}
	cfg.Lease = cfg.Pool.lease
	s := &Server{expID: exp.Info().ID, pool: cfg.Pool, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), claimWait: claimWait}
	s.mux.HandleFunc("POST /v1/register", s.register)
	s.mux.HandleFunc("POST /v1/claim", s.claim)
	s.mux.HandleFunc("POST /v1/heartbeat", s.heartbeat)
	s.mux.HandleFunc("POST /v1/result", s.result)
	s.mux.HandleFunc("POST /v1/bye", s.bye)
	s.mux.HandleFunc("POST /v1/progress", s.progress)
	return s, nil
}

// Pool returns the server's transport (its runners are the driver's).
func (s *Server) Pool() *Pool { return s.pool }

// ReadToken reads an access token from a file (surrounding white space
// removed). An empty file is an error; the token is never in an error.
func ReadToken(path string) (string, error) {
	b, err := safeio.ReadFile(context.Background(), path, safeio.Limit{What: "token file"}, 1<<20)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", path)
	}
	return tok, nil
}

// ServeHTTP checks the token and the body's size, then dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.Token)) != 1 {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		s.log.Warn("refused a request without the right access token", "from", host, "path", RedactPath(r.URL.Path))
		// Not kept open for more requests: a client without the token
		// gets nothing from a connection.
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusUnauthorized, ErrorResponse{Error: "missing or wrong access token"})
		return
	}
	limit := bodyLimit(r.URL.Path)
	if r.ContentLength > limit {
		// Refused before reading a byte of it.
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusRequestEntityTooLarge, ErrorResponse{Error: fmt.Sprintf("request body of %d bytes is larger than the %d bytes allowed", r.ContentLength, limit)})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	s.mux.ServeHTTP(w, r)
}

// maxBody bounds the body of a result (outcomes carry captured output);
// maxSmallBody the body of every other request.
const (
	maxBody      = 64 << 20
	maxSmallBody = 64 << 10
)

func bodyLimit(path string) int64 {
	switch path {
	case "/v1/result":
		return maxBody
	case "/v1/progress":
		return maxProgressBody
	}
	return maxSmallBody
}

// maxProgressBody bounds a progress request's body.
const maxProgressBody = 1 << 20

// routes are the path segments a request path may show in a log line;
// any other segment (a token a client put in the URL) is redacted.
var routes = map[string]bool{"v1": true, "register": true, "claim": true, "heartbeat": true, "result": true, "bye": true, "progress": true}

// RedactPath returns a request path for a log line: every segment that
// is not one of the server's own ("/<token>/v1/register" becomes
// "/[REDACTED]/v1/register"), at most 200 bytes.
func RedactPath(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if seg != "" && !routes[seg] {
			segs[i] = "[REDACTED]"
		}
	}
	out := strings.Join(segs, "/")
	if len(out) > 200 {
		out = out[:200] + "..."
	}
	return out
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) fail(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, ErrorResponse{Error: fmt.Sprintf(format, args...)})
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestEntityTooLarge, ErrorResponse{Error: fmt.Sprintf("request body larger than the %d bytes allowed", tooBig.Limit)})
			return false
		}
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		writeJSON(w, http.StatusBadRequest, ErrorResponse{Error: "bad request body: " + msg})
		return false
	}
	return true
}

// workerIDRe is what a worker id looks like: net:<name>:<random>.
var workerIDRe = regexp.MustCompile(`^net:[A-Za-z0-9_.@-]{1,64}:[0-9a-f]{16}$`)

var nameBad = regexp.MustCompile(`[^A-Za-z0-9_.@-]+`)

// worker checks a request's worker id; a malformed one is refused. A well
// formed id this server does not know (a worker of a server that
// restarted) is taken as a worker of one slot until its heartbeat says
// how many it has.
func (s *Server) worker(w http.ResponseWriter, id string) bool {
	if !workerIDRe.MatchString(id) {
		s.fail(w, http.StatusBadRequest, "unknown worker id: register first")
		return false
	}
	if !s.pool.known(id) {
		s.pool.register(id, 1)
	}
	return true
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req RegisterRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Runners < 1 {
		req.Runners = 1
	}
	// A worker's slots are bounded: each is a runner of the driver's.
	req.Runners = min(req.Runners, maxWorkerRunners)
	name := nameBad.ReplaceAllString(req.Name, "_")
	if name == "" {
		name = "worker"
	}
	if len(name) > 64 {
		name = name[:64]
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := "net:" + name + ":" + hex.EncodeToString(b)
	s.pool.register(id, req.Runners)
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	s.log.Info("worker connected", "worker", id, "from", host, "runners", req.Runners)
	writeJSON(w, http.StatusOK, RegisterResponse{WorkerID: id, ExperimentID: s.expID, LeaseMS: s.cfg.Lease.Milliseconds()})
}

// maxWorkerRunners bounds the trial slots one worker may register.
const maxWorkerRunners = 1024

func (s *Server) claim(w http.ResponseWriter, r *http.Request) {
	var req ClaimRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.worker(w, req.WorkerID) {
		return
	}
	a, ok := s.pool.takeWait(r.Context(), req.WorkerID, s.claimWait)
	if !ok {
		writeJSON(w, http.StatusOK, ClaimResponse{Finished: s.pool.finished()})
		return
	}
	s.log.Info("trial assigned", "trial", a.TrialID, "worker", req.WorkerID)
	writeJSON(w, http.StatusOK, ClaimResponse{Trial: a})
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) {
	var req HeartbeatRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.worker(w, req.WorkerID) {
		return
	}
	req.Runners = min(max(req.Runners, 1), maxWorkerRunners)
	writeJSON(w, http.StatusOK, HeartbeatResponse{Held: s.pool.renew(req.WorkerID, req.Runners, req.Trials)})
}

// stored is the answer to a result or progress the driver took.
type stored struct {
	Stored bool `json:"stored"`
}

func (s *Server) result(w http.ResponseWriter, r *http.Request) {
	var req ResultRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.worker(w, req.WorkerID) {
		return
	}
	out, err := engines.DecodeOutcome(req.Outcome)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "trial %d: %v", req.TrialID, err)
		return
	}
	// The driver's dispatcher takes it as a local runner's outcome
	// (trial.RunEnd, trial.Finalize, storage, the optimizer).
	out.FailureReason = trial.BoundReason(out.FailureReason)
	if err := s.pool.complete(r.Context(), req.WorkerID, req.TrialID, out, s.claimWait); err != nil {
		s.log.Warn("rejected a result for a trial no longer assigned to the worker", "trial", req.TrialID, "worker", req.WorkerID)
		// Who holds it now is not said: a token holder must not learn
		// another worker's id (and post as that worker).
		s.fail(w, http.StatusConflict, "trial %d is not assigned to this worker", req.TrialID)
		return
	}
	s.log.Info("trial result received", "trial", req.TrialID, "worker", req.WorkerID, "status", out.Status)
	writeJSON(w, http.StatusOK, stored{true})
}

// progress relays a running trial's intermediate results to the driver
// (Spec.Progress). A trial the worker no longer holds (stopped, pruned,
// taken over) is answered 409: the worker stops it.
func (s *Server) progress(w http.ResponseWriter, r *http.Request) {
	var req ProgressRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !s.worker(w, req.WorkerID) {
		return
	}
	if len(req.Progress) > maxProgressReports {
		s.fail(w, http.StatusBadRequest, "%d progress reports in one request, at most %d", len(req.Progress), maxProgressReports)
		return
	}
	if err := s.pool.progress(req.WorkerID, req.TrialID, req.Progress); err != nil {
		s.fail(w, http.StatusConflict, "trial %d is not assigned to this worker", req.TrialID)
		return
	}
	writeJSON(w, http.StatusOK, stored{true})
}

// maxProgressReports bounds the reports of one progress request.
const maxProgressReports = 1000

func (s *Server) bye(w http.ResponseWriter, r *http.Request) {
	var req ByeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if !workerIDRe.MatchString(req.WorkerID) {
		s.fail(w, http.StatusBadRequest, "unknown worker id: register first")
		return
	}
	s.pool.bye(req.WorkerID)
	s.log.Info("worker left", "worker", req.WorkerID)
	writeJSON(w, http.StatusOK, struct{}{})
}

// ListenAndServe serves on addr until ctx ends (TLS when cert and key
// files are given). ready, when not nil, gets the address listened on.
func (s *Server) ListenAndServe(ctx context.Context, addr, certFile, keyFile string, ready chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	maxConns := s.cfg.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns()
	}
	s.limiter = newConnLimiter(maxConns, s.log)
	srv := &http.Server{Handler: s, ReadHeaderTimeout: serveHeaderTimeout, ReadTimeout: serveReadTimeout,
		WriteTimeout: serveWriteTimeout, IdleTimeout: serveIdleTimeout, ConnState: s.limiter.state,
		MaxHeaderBytes: 64 << 10, ErrorLog: nil,
		// Requests end with ctx: a claim waiting for a trial is answered.
		BaseContext: func(net.Listener) context.Context { return ctx }}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() {
		if certFile != "" || keyFile != "" {
			errc <- srv.ServeTLS(ln, certFile, keyFile)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve: %w", err)
	}
}
