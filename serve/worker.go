package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/trial"
)

// WorkerConfig configures a network worker.
type WorkerConfig struct {
	// URL is the server's base URL (http://host:port or https://...).
	URL   string
	Token string
	// CAFile, when set, is the PEM file of the certificate authority that
	// signed the server's certificate (a self-signed server).
	CAFile string
	// Name names the worker in the server's log (default: the host name).
	Name    string
	Runners []schedulers.Runner
	// Globals are the worker's globals (from its own configs).
	Globals map[string]any
	// Poll is how long a runner waits before asking again when there is no
	// trial (default 1s).
	Poll time.Duration
	// GiveUp ends the worker when the server stays unreachable this long
	// (default 10 minutes).
	GiveUp time.Duration
	// TelemetryInterval samples the trials' processes (0: off).
	TelemetryInterval time.Duration
	Logger            *slog.Logger
	// Redact, when set, is applied to each trial's outcome before it
	// leaves the worker (keeping secrets out of what the server stores).
	Redact func(trial.Outcome) trial.Outcome
	// OnFinished is called after each trial's outcome was handed over
	// (stored true) or refused (stored false).
	OnFinished func(trialID int, out trial.Outcome, stored bool)
}

// WorkerStats counts a worker's trials.
type WorkerStats struct {
	Run, Stored, Rejected int
}

// ErrUnauthorized: the server refused the token.
var ErrUnauthorized = errors.New("the server refused the access token")

// errTakenOver cancels a trial whose lease the worker lost.
var errTakenOver = errors.New("the driver no longer assigns the trial to this worker (stopped or timed out there, or this worker's lease on it ran out)")

type client struct {
	url, token string
	http       *http.Client
	giveUp     time.Duration
}

// errHTTP is a refusal with its status code.
type errHTTP struct {
	code int
	msg  string
}

func (e *errHTTP) Error() string { return fmt.Sprintf("server: %s (HTTP %d)", e.msg, e.code) }

func (c *client) call(ctx context.Context, path string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return redactErr(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorResponse
		_ = json.Unmarshal(body, &e)
		if e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		if len(e.Error) > 1024 {
			// What a server says is quoted in logs and errors: bounded.
			e.Error = e.Error[:1024] + "..."
		}
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%w (HTTP 401)", ErrUnauthorized)
		}
		return &errHTTP{code: resp.StatusCode, msg: e.Error}
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

// retry calls until it succeeds, the server refuses (4xx), or ctx ends,
// waiting longer after each network failure (up to 15 s): a restarting
// server is waited for.
func (c *client) retry(ctx context.Context, log *slog.Logger, what, path string, in, out any) error {
	wait := 200 * time.Millisecond
	warned := false
	start := time.Now()
	for {
		err := c.call(ctx, path, in, out)
		var he *errHTTP
		var ve *tls.CertificateVerificationError
		switch {
		case err == nil:
			if warned {
				log.Info("the server answers again", "call", what)
			}
			return nil
		case errors.Is(err, ErrUnauthorized), errors.As(err, &he) && he.code < 500, ctx.Err() != nil:
			return err
		case errors.As(err, &ve):
			return fmt.Errorf("%w (give the server's CA certificate with --tls-ca)", err)
		}
		if !warned {
			log.Warn("cannot reach the server; trying again", "call", what, "err", err)
			warned = true
		}
		if c.giveUp > 0 && time.Since(start) > c.giveUp {
			return fmt.Errorf("the server was unreachable for %s: %w", c.giveUp, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(wait*2, 15*time.Second)
	}
}

// RunWorker registers with the server and runs trials on the runners until
// the experiment is over (nil) or ctx ends. On the way out it hands its
// unfinished trials back.
func RunWorker(ctx context.Context, cfg WorkerConfig) (WorkerStats, error) {
	var stats WorkerStats
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Name == "" {
		cfg.Name, _ = os.Hostname()
	}
	if cfg.GiveUp <= 0 {
		cfg.GiveUp = 10 * time.Minute
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := safeio.ReadFile(context.Background(), cfg.CAFile, safeio.Limit{What: "CA file"}, safeio.DefaultConfigLimit)
		if err != nil {
			return stats, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return stats, fmt.Errorf("CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	base, dropped, err := baseURL(cfg.URL)
	if err != nil {
		return stats, err
	}
	shown := RedactURL(cfg.URL)
	if dropped {
		cfg.Logger.Warn("the server URL's user information, query and fragment are ignored: the access token comes from the token file", "url", shown)
	}
	c := &client{url: base, token: cfg.Token, http: &http.Client{Transport: tr, Timeout: 60 * time.Second}, giveUp: cfg.GiveUp}
	log := cfg.Logger
	var reg RegisterResponse
	if err := c.retry(ctx, log, "register", "/v1/register", RegisterRequest{Name: cfg.Name, Runners: len(cfg.Runners)}, &reg); err != nil {
		return stats, fmt.Errorf("registering with %s: %w", shown, err)
	}
	log.Info("registered with the server", "worker", reg.WorkerID, "experiment", reg.ExperimentID)
	w := &worker{cfg: cfg, c: c, id: reg.WorkerID, exp: reg.ExperimentID, log: log, running: map[int]context.CancelCauseFunc{}}
	lease := time.Duration(reg.LeaseMS) * time.Millisecond
	if lease <= 0 {
		lease = 30 * time.Second
	}
	hctx, stopBeat := context.WithCancel(ctx)
	var beatDone sync.WaitGroup
	beatDone.Add(1)
	go func() { defer beatDone.Done(); w.heartbeats(hctx, lease/3) }()

	var wg sync.WaitGroup
	errs := make([]error, len(cfg.Runners))
	for i, r := range cfg.Runners {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = w.loop(ctx, r) }()
	}
	wg.Wait()
	stopBeat()
	beatDone.Wait()
	// Hand back what was not finished (interrupted): others run it at once.
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := c.call(bctx, "/v1/bye", ByeRequest{WorkerID: w.id}, nil); err != nil {
		log.Warn("could not say goodbye to the server; its leases on this worker's trials run out instead", "err", err)
	}
	w.mu.Lock()
	stats = w.stats
	w.mu.Unlock()
	if ctx.Err() != nil {
		return stats, ctx.Err()
	}
	return stats, errors.Join(errs...)
}

type worker struct {
	cfg     WorkerConfig
	c       *client
	id, exp string
	log     *slog.Logger
	mu      sync.Mutex
	running map[int]context.CancelCauseFunc
	stats   WorkerStats
	// noProgress is set once the server said it takes no progress.
	noProgress atomic.Bool
}

// heartbeats renews the leases; trials the server says are no longer held
// are stopped.
func (w *worker) heartbeats(ctx context.Context, every time.Duration) {
	t := time.NewTicker(max(every, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		ids := make([]int, 0, len(w.running))
		for id := range w.running {
			ids = append(ids, id)
		}
		w.mu.Unlock()
		var resp HeartbeatResponse
		if err := w.c.call(ctx, "/v1/heartbeat", HeartbeatRequest{WorkerID: w.id, Runners: len(w.cfg.Runners), Trials: ids}, &resp); err != nil {
			if ctx.Err() == nil {
				w.log.Warn("heartbeat failed; the worker's leases may run out", "err", err)
			}
			continue
		}
		held := map[int]bool{}
		for _, id := range resp.Held {
			held[id] = true
		}
		w.mu.Lock()
		for _, id := range ids {
			if cancel, ok := w.running[id]; ok && !held[id] {
				w.log.Warn("the server no longer assigns this trial to this worker; stopping it", "trial", id)
				cancel(errTakenOver)
			}
		}
		w.mu.Unlock()
	}
}

// loop claims and runs trials on one runner until the experiment is over.
func (w *worker) loop(ctx context.Context, r schedulers.Runner) error {
	for {
		var resp ClaimResponse
		if err := w.c.retry(ctx, w.log, "claim", "/v1/claim", ClaimRequest{WorkerID: w.id, RunnerID: r.ID()}, &resp); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("claiming a trial: %w", err)
		}
		if resp.Trial == nil {
			if resp.Finished {
				return nil
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(w.cfg.Poll):
			}
			continue
		}
		w.run(ctx, r, resp.Trial)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// run runs one assigned trial and posts its outcome.
func (w *worker) run(ctx context.Context, r schedulers.Runner, a *Assignment) {
	globals := trial.Globals(w.cfg.Globals, a.Metadata, nil, w.exp, a.TrialID, r.ID())
	spec := schedulers.Spec{ExperimentID: w.exp, TrialID: a.TrialID, Params: a.Params, Globals: globals,
		TelemetryInterval: w.cfg.TelemetryInterval}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.mu.Lock()
	w.running[a.TrialID] = cancel
	w.stats.Run++
	w.mu.Unlock()
	// Intermediate results go to the driver's Spec.Progress as the trial
	// runs, before its outcome.
	pp := newProgressPoster(w, a.TrialID, cancel)
	spec.Progress = pp.add
	go pp.run(ctx)
	w.log.Info("running trial", "trial", a.TrialID, "runner", r.ID())
	out := r.Run(tctx, spec)
	pp.close(10 * time.Second)
	w.mu.Lock()
	delete(w.running, a.TrialID)
	w.mu.Unlock()
	if ctx.Err() != nil {
		// Interrupted: the trial goes back to the queue (bye).
		return
	}
	if errors.Is(context.Cause(tctx), errTakenOver) {
		w.finished(a.TrialID, out, false)
		return
	}
	if w.cfg.Redact != nil {
		out = w.cfg.Redact(out)
	}
	b, err := engines.EncodeOutcome(out)
	if err != nil {
		w.log.Error("cannot encode the outcome", "trial", a.TrialID, "err", err)
		return
	}
	err = w.c.retry(ctx, w.log, "result", "/v1/result", ResultRequest{WorkerID: w.id, TrialID: a.TrialID, Outcome: b}, nil)
	var he *errHTTP
	switch {
	case err == nil:
		w.finished(a.TrialID, out, true)
	case errors.As(err, &he) && he.code == http.StatusConflict:
		w.log.Warn("the server rejected the trial's result", "trial", a.TrialID, "err", err)
		w.finished(a.TrialID, out, false)
	default:
		w.log.Error("could not hand the trial's result over", "trial", a.TrialID, "err", err)
	}
}

func (w *worker) finished(id int, out trial.Outcome, stored bool) {
	w.mu.Lock()
	if stored {
		w.stats.Stored++
	} else {
		w.stats.Rejected++
	}
	w.mu.Unlock()
	if w.cfg.OnFinished != nil {
		w.cfg.OnFinished(id, out, stored)
	}
}
