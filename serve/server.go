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
	// ClaimRequest: POST /v1/claim, for one of the worker's runners.
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
	// ExperimentStatus reads the experiment's stored status (the driver
	// sets it); nil: never finished.
	ExperimentStatus func(ctx context.Context) (trial.Status, error)
	Logger           *slog.Logger
	// MaxConns bounds the open connections (0: DefaultMaxConns). Past it,
	// the connections that wait longest without a request in progress
	// are closed (see ListenAndServe).
	MaxConns int
}

// Server serves one experiment.
type Server struct {
	exp storage.Experiment
	cfg Config
	log *slog.Logger
	mux *http.ServeMux
	// limiter bounds the open connections (ListenAndServe).
	limiter *connLimiter
}

// New returns a server for exp (the experiment as opened).
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
	s := &Server{exp: exp, cfg: cfg, log: cfg.Logger, mux: http.NewServeMux()}
	s.mux.HandleFunc("POST /v1/register", s.register)
	s.mux.HandleFunc("POST /v1/claim", s.claim)
	s.mux.HandleFunc("POST /v1/heartbeat", s.heartbeat)
	s.mux.HandleFunc("POST /v1/result", s.result)
	s.mux.HandleFunc("POST /v1/bye", s.bye)
	return s, nil
}

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
	if path == "/v1/result" {
		return maxBody
	}
	return maxSmallBody
}

// routes are the path segments a request path may show in a log line;
// any other segment (a token a client put in the URL) is redacted.
var routes = map[string]bool{"v1": true, "register": true, "claim": true, "heartbeat": true, "result": true, "bye": true}

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

// workerLease is how long a network worker counts for the driver's
// queue (its runners get trials queued) after its registration or last
// heartbeat: half the trial lease. Its heartbeats come every third of the
// lease, so a live worker keeps counting, and a killed one stops counting
// after half the lease, before its claims on trials run out.
func (s *Server) workerLease() time.Duration { return s.cfg.Lease / 2 }

// workerIDRe is what a worker id looks like: net:<name>:<random>.
var workerIDRe = regexp.MustCompile(`^net:[A-Za-z0-9_.@-]{1,64}:[0-9a-f]{16}$`)

var nameBad = regexp.MustCompile(`[^A-Za-z0-9_.@-]+`)

// view is the experiment acting for a worker; a malformed id is refused.
func (s *Server) view(w http.ResponseWriter, id string) (storage.Experiment, bool) {
	if !workerIDRe.MatchString(id) {
		s.fail(w, http.StatusBadRequest, "unknown worker id: register first")
		return nil, false
	}
	return s.exp.WithOwner(id, s.cfg.Lease), true
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req RegisterRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Runners < 1 {
		req.Runners = 1
	}
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
	if err := s.exp.WithOwner(id, s.workerLease()).RegisterWorker(r.Context(), req.Runners); err != nil {
		s.fail(w, http.StatusInternalServerError, "registering: %v", err)
		return
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	s.log.Info("worker connected", "worker", id, "from", host, "runners", req.Runners)
	writeJSON(w, http.StatusOK, RegisterResponse{WorkerID: id, ExperimentID: s.exp.Info().ID, LeaseMS: s.cfg.Lease.Milliseconds()})
}

func (s *Server) claim(w http.ResponseWriter, r *http.Request) {
	var req ClaimRequest
	if !decodeBody(w, r, &req) {
		return
	}
	v, ok := s.view(w, req.WorkerID)
	if !ok {
		return
	}
	ctx := r.Context()
	trials, err := v.Claim(ctx, 1)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "claiming a trial: %v", err)
		return
	}
	if len(trials) == 0 {
		finished, err := s.finished(ctx)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, "reading the experiment: %v", err)
			return
		}
		writeJSON(w, http.StatusOK, ClaimResponse{Finished: finished})
		return
	}
	t := trials[0]
	if req.RunnerID > 0 {
		if err := v.SetTrialRunner(ctx, t.ID, req.RunnerID); err != nil {
			s.fail(w, http.StatusInternalServerError, "assigning trial %d: %v", t.ID, err)
			return
		}
	}
	if err := v.UpdateStatus(ctx, t.ID, trial.RUNNING, time.Time{}); err != nil {
		s.fail(w, http.StatusInternalServerError, "starting trial %d: %v", t.ID, err)
		return
	}
	s.log.Info("trial assigned", "trial", t.ID, "worker", req.WorkerID)
	writeJSON(w, http.StatusOK, ClaimResponse{Trial: &Assignment{TrialID: t.ID, Params: t.Params, Metadata: t.Metadata}})
}

// finished reports whether the experiment is over: its driver set a final
// status and no trial is left unfinished.
func (s *Server) finished(ctx context.Context) (bool, error) {
	if s.cfg.ExperimentStatus == nil {
		return false, nil
	}
	st, err := s.cfg.ExperimentStatus(ctx)
	if err != nil {
		return false, err
	}
	if st == trial.RUNNING || st == trial.PENDING {
		return false, nil
	}
	pending, err := s.exp.PendingTrials(ctx)
	if err != nil {
		return false, err
	}
	return len(pending) == 0, nil
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) {
	var req HeartbeatRequest
	if !decodeBody(w, r, &req) {
		return
	}
	v, ok := s.view(w, req.WorkerID)
	if !ok {
		return
	}
	ctx := r.Context()
	if _, err := v.Heartbeat(ctx); err != nil {
		s.fail(w, http.StatusInternalServerError, "renewing leases: %v", err)
		return
	}
	if err := s.exp.WithOwner(req.WorkerID, s.workerLease()).RegisterWorker(ctx, max(req.Runners, 1)); err != nil {
		s.fail(w, http.StatusInternalServerError, "renewing the worker: %v", err)
		return
	}
	resp := HeartbeatResponse{Held: []int{}}
	if len(req.Trials) > 0 {
		pending, err := s.exp.PendingTrials(ctx)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, "reading trials: %v", err)
			return
		}
		mine := map[int]bool{}
		for _, t := range pending {
			if t.Owner == req.WorkerID && !t.StopRequested {
				mine[t.ID] = true
			}
		}
		for _, id := range req.Trials {
			if mine[id] {
				resp.Held = append(resp.Held, id)
			}
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) result(w http.ResponseWriter, r *http.Request) {
	var req ResultRequest
	if !decodeBody(w, r, &req) {
		return
	}
	v, ok := s.view(w, req.WorkerID)
	if !ok {
		return
	}
	out, err := engines.DecodeOutcome(req.Outcome)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	if out.Ts.IsZero() {
		out.Ts = time.Now().UTC()
	}
	final, err := trial.RunEnd(out.Status)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "trial %d: %v", req.TrialID, err)
		return
	}
	if !final {
		// A run that ended READY (a NetworkEnv or SaaSEnv alone), PENDING
		// or RUNNING: as in mlos_bench, and as for every runner kind
		// (trial.RunEnd), the trial keeps that status, unfinished and
		// without results.
		if err := v.UpdateStatus(r.Context(), req.TrialID, out.Status, out.Ts); err != nil {
			if errors.Is(err, storage.ErrNotOwner) || errors.Is(err, storage.ErrFinished) || errors.Is(err, storage.ErrNotFound) {
				s.fail(w, http.StatusConflict, "trial %d is not assigned to this worker", req.TrialID)
				return
			}
			s.fail(w, http.StatusInternalServerError, "storing trial %d: %v", req.TrialID, err)
			return
		}
		s.log.Warn("a trial's run ended without a final status; as in mlos_bench, it keeps it, unfinished and without results", "trial", req.TrialID, "worker", req.WorkerID, "status", out.Status)
		writeJSON(w, http.StatusOK, struct {
			Stored bool `json:"stored"`
		}{true})
		return
	}
	out = storage.Targets(s.exp.Info().Objectives).Finalize(out)
	out.FailureReason = trial.BoundReason(out.FailureReason)
	err = v.Finish(r.Context(), req.TrialID, out)
	switch {
	case err == nil:
		s.log.Info("trial finished", "trial", req.TrialID, "worker", req.WorkerID, "status", out.Status)
		writeJSON(w, http.StatusOK, struct {
			Stored bool `json:"stored"`
		}{true})
	case errors.Is(err, storage.ErrNotOwner), errors.Is(err, storage.ErrFinished), errors.Is(err, storage.ErrNotFound):
		s.log.Warn("rejected a result for a trial no longer assigned to the worker", "trial", req.TrialID, "worker", req.WorkerID, "err", err)
		// Who owns it now is not said: a token holder must not learn
		// another worker's id (and post as that worker).
		s.fail(w, http.StatusConflict, "trial %d is not assigned to this worker", req.TrialID)
	default:
		s.fail(w, http.StatusInternalServerError, "storing trial %d: %v", req.TrialID, err)
	}
}

func (s *Server) bye(w http.ResponseWriter, r *http.Request) {
	var req ByeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	v, ok := s.view(w, req.WorkerID)
	if !ok {
		return
	}
	ctx := r.Context()
	err := errors.Join(v.Release(ctx), v.UnregisterWorker(ctx))
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "%v", err)
		return
	}
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
		MaxHeaderBytes: 64 << 10, ErrorLog: nil}
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
