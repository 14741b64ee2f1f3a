// Package ui is bench's dashboard (bench ui, bench run --ui): a web
// server over any bench storage that lists the experiments, shows one
// experiment live while it runs (from the storage's change feed), one
// trial in full, and compares two experiments with bench compare's
// statistics. Charts are SVG drawn on the server, the pages are plain
// HTML (tables sort and filter through links and forms, without script),
// and a small embedded script polls the change feed to redraw the live
// part of an experiment's page. Nothing is fetched from elsewhere.
//
// It reads by default. With Options.Actions it can ask a running bench
// to stop a trial or the experiment (storage.Experiment.RequestStop, the
// bench stop mechanism); with Options.Token every action must carry that
// token (bench serve's access token), which cmd/bench requires when the
// dashboard listens on an address other than loopback.
package ui

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

//go:embed assets
var assets embed.FS

// Options configure a dashboard.
type Options struct {
	// Experiment limits the dashboard to one experiment (bench run --ui);
	// empty: every experiment of the storage.
	Experiment string
	// Actions allows stopping a trial or the experiment; without it the
	// dashboard only reads.
	Actions bool
	// Token, when set, must accompany every action (form field "token"
	// or Authorization: Bearer).
	Token string
	// LogX names tunables drawn on log axes (their "log": true); a
	// positive tunable spanning three decades is on one anyway.
	LogX map[string]bool
	// Planned returns the number of trials the budget of an experiment
	// allows (0: unknown); only the running bench knows it.
	Planned func(expID string) int
	// RunnerKind says what runs the trials of an experiment ("" when not
	// known: it is then guessed from the stored trials).
	RunnerKind func(expID string) string
	// Redact removes secrets from text shown (captured output, failure
	// reasons); nil shows text as stored (already redacted when stored).
	Redact func(string) string
	// Poll is how often the page asks for changes (default 500 ms).
	Poll time.Duration
	// Log receives warnings (default: slog.Default()).
	Log *slog.Logger
}

// Server is the dashboard's HTTP handler.
type Server struct {
	st  storage.Storage
	o   Options
	mux *http.ServeMux

	mu   sync.Mutex
	exps map[string]*expCache
}

// New returns a dashboard over st.
func New(st storage.Storage, o Options) *Server {
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	s := &Server{st: st, o: o, exps: map[string]*expCache{}, mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.handleList)
	s.mux.HandleFunc("GET /assets/{file}", s.handleAsset)
	s.mux.HandleFunc("GET /e/{exp}", s.handleExperiment)
	s.mux.HandleFunc("GET /e/{exp}/live", s.handleLive)
	s.mux.HandleFunc("GET /e/{exp}/changes", s.handleChanges)
	s.mux.HandleFunc("GET /e/{exp}/t/{trial}", s.handleTrial)
	s.mux.HandleFunc("POST /e/{exp}/stop", s.handleStop)
	s.mux.HandleFunc("POST /e/{exp}/t/{trial}/stop", s.handleStop)
	s.mux.HandleFunc("GET /compare", s.handleCompare)
	return s
}

// ServeHTTP sets the security headers every page has, then dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Only our own files: no inline script, nothing from elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	s.mux.ServeHTTP(w, r)
}

// ListenAndServe serves until ctx ends; the address listened on is sent
// to ready once listening.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready chan<- string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
	if ready != nil {
		ready <- ln.Addr().String()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
		return nil
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// expCache holds an experiment's trials, kept up to date from the change
// feed: each refresh reads only what changed since the last one.
type expCache struct {
	mu     sync.Mutex
	exp    storage.Experiment
	info   storage.ExperimentInfo
	infoAt time.Time
	trials map[int]storage.Trial
	seq    int64
	// noFeed: the experiment has no change feed (an mlos_bench database
	// read as it is): every refresh, at most once a second, reads all.
	noFeed   bool
	loadedAt time.Time
	sorted   []storage.Trial // by id; nil after a change
	version  int64           // bumped at every change seen
	// The last rendered live part, by query.
	fragKey string
	frag    []byte
}

// experiment returns the cache of experiment id, refreshed.
func (s *Server) experiment(ctx context.Context, id string) (*expCache, error) {
	if s.o.Experiment != "" && id != s.o.Experiment {
		return nil, fmt.Errorf("%w: experiment %q", storage.ErrNotFound, id)
	}
	s.mu.Lock()
	c := s.exps[id]
	s.mu.Unlock()
	if c == nil {
		exp, err := s.st.LoadExperiment(ctx, id)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if c = s.exps[id]; c == nil {
			c = &expCache{exp: exp, info: exp.Info(), infoAt: time.Now()}
			s.exps[id] = c
		}
		s.mu.Unlock()
	}
	return c, c.refresh(ctx, s.st)
}

func (c *expCache) refresh(ctx context.Context, st storage.Storage) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.infoAt) > 300*time.Millisecond {
		if e, err := st.LoadExperiment(ctx, c.info.ID); err == nil {
			if ni := e.Info(); ni.Status != c.info.Status || !ni.TsEnd.Equal(c.info.TsEnd) {
				c.version++
				c.fragKey = ""
				c.info = ni
			}
			c.infoAt = time.Now()
		}
	}
	switch {
	case c.trials == nil || (c.noFeed && time.Since(c.loadedAt) > time.Second):
		ts, seq, err := c.exp.Changes(ctx, 0)
		if err != nil {
			return err
		}
		fresh := make(map[int]storage.Trial, len(ts))
		for _, t := range ts {
			fresh[t.ID] = t
		}
		// Without a feed (an mlos_bench database, or an experiment whose
		// changes nobody has numbered yet, read by a read-only store) the
		// trials are read again each second: a change only if they differ.
		same := c.trials != nil && reflect.DeepEqual(c.trials, fresh)
		c.trials = fresh
		c.seq, c.noFeed, c.loadedAt = seq, seq == 0, time.Now()
		if !same {
			c.changed()
		}
	case !c.noFeed:
		ts, seq, err := c.exp.Changes(ctx, c.seq)
		if err != nil {
			return err
		}
		c.seq = seq
		// Only a trial that differs from the one held is a change: a
		// read-only store on MySQL/MariaDB returns the changes waiting
		// for a number in every poll (storage/sql feed.go), and counting
		// them again would render the live part anew at every poll of
		// every open page, a finished experiment's too.
		changed := false
		for _, t := range ts {
			if old, ok := c.trials[t.ID]; !ok || !reflect.DeepEqual(old, t) {
				changed = true
			}
			c.trials[t.ID] = t
		}
		if changed {
			c.changed()
		}
	}
	return nil
}

func (c *expCache) changed() {
	c.sorted = nil
	c.version++
	c.fragKey = ""
}

// snapshot returns the trials by id and the experiment as last read.
func (c *expCache) snapshot() ([]storage.Trial, storage.ExperimentInfo, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sorted == nil {
		c.sorted = make([]storage.Trial, 0, len(c.trials))
		for _, t := range c.trials {
			c.sorted = append(c.sorted, t)
		}
		sort.Slice(c.sorted, func(a, b int) bool { return c.sorted[a].ID < c.sorted[b].ID })
	}
	return c.sorted, c.info, c.version
}

func (s *Server) handleAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case len(name) > 3 && name[len(name)-3:] == ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case len(name) > 4 && name[len(name)-4:] == ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(b)
}

// changesResponse is /e/{exp}/changes's answer: the change number to ask
// from next, the experiment's status and the trials changed since the
// number asked (id and status).
type changesResponse struct {
	Seq     int64          `json:"seq"`
	Version int64          `json:"version"`
	Status  trial.Status   `json:"status"`
	Trials  []changedTrial `json:"trials"`
}

type changedTrial struct {
	ID     int          `json:"trial_id"`
	Status trial.Status `json:"status"`
}

func (s *Server) handleChanges(w http.ResponseWriter, r *http.Request) {
	c, err := s.experiment(r.Context(), r.PathValue("exp"))
	if err != nil {
		s.fail(w, err)
		return
	}
	since, _ := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	_, info, version := c.snapshot()
	c.mu.Lock()
	resp := changesResponse{Seq: c.seq, Version: version, Status: info.Status, Trials: []changedTrial{}}
	c.mu.Unlock()
	if since > 0 && since < resp.Seq {
		ts, _, err := c.exp.Changes(r.Context(), since)
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, t := range ts {
			resp.Trials = append(resp.Trials, changedTrial{t.ID, t.Status})
		}
	}
	writeJSON(w, resp)
}

// fail answers an error: 404 for an unknown experiment or trial, 500
// otherwise (logged).
func (s *Server) fail(w http.ResponseWriter, err error) {
	if errors.Is(err, storage.ErrNotFound) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	s.o.Log.Warn("ui: request failed", "err", err)
	http.Error(w, "storage error: "+s.o.Redact(err.Error()), http.StatusInternalServerError)
}

// handleStop asks the experiment or one trial to stop.
func (s *Server) handleStop(w http.ResponseWriter, r *http.Request) {
	if !s.o.Actions {
		http.Error(w, "this dashboard is read-only (start bench ui with --actions to stop trials from it)", http.StatusForbidden)
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "refused: the request comes from another site", http.StatusForbidden)
		return
	}
	if s.o.Token != "" {
		tok := r.PostFormValue("token")
		if h := r.Header.Get("Authorization"); len(h) > 7 && h[:7] == "Bearer " {
			tok = h[7:]
		}
		if subtle.ConstantTimeCompare([]byte(tok), []byte(s.o.Token)) != 1 {
			s.o.Log.Warn("ui: refused an action without the right access token", "from", r.RemoteAddr, "path", r.URL.Path)
			http.Error(w, "missing or wrong access token", http.StatusUnauthorized)
			return
		}
	}
	id := r.PathValue("exp")
	c, err := s.experiment(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	trialID := 0
	if ts := r.PathValue("trial"); ts != "" {
		n, err := strconv.Atoi(ts)
		if err != nil || n < 1 {
			http.Error(w, "bad trial id", http.StatusBadRequest)
			return
		}
		trialID = n
	}
	if err := c.exp.RequestStop(r.Context(), trialID); err != nil {
		switch {
		case errors.Is(err, storage.ErrFinished):
			http.Error(w, fmt.Sprintf("trial %d has already finished", trialID), http.StatusConflict)
		default:
			s.fail(w, err)
		}
		return
	}
	s.o.Log.Info("ui: stop requested", "experiment", id, "trial", trialID, "from", r.RemoteAddr)
	back := "/e/" + url.PathEscape(id)
	if trialID > 0 {
		back += "/t/" + strconv.Itoa(trialID)
	}
	http.Redirect(w, r, back+"?stopped=1", http.StatusSeeOther)
}

// sameOrigin refuses a cross-site form post (a page elsewhere posting to
// a dashboard on loopback): the browser's Sec-Fetch-Site, or failing
// that its Origin, must say the request comes from this dashboard.
func sameOrigin(r *http.Request) bool {
	if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" {
		return sf == "same-origin" || sf == "none"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && o != "null" && u.Host == r.Host
	}
	return true // not a browser (curl): the token, if any, decides
}
