package awsbatchtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
)

// RunFunc plays a job's container: argv is the container's command (the
// job definition's, or the job's containerOverrides.command), env the
// test's base environment (AWSEnv) followed by the container's
// environment. It returns the exit code; ctx ends when moto kills the
// container (TerminateJob).
type RunFunc func(ctx context.Context, argv, env []string) int

// Docker is a fake Docker Engine API, just enough for moto's Batch
// backend (docker-py's from_env, containers.run, reload, logs, wait, kill
// and remove): each container is a call of a RunFunc.
type Docker struct {
	srv *httptest.Server
	run RunFunc // for containers without a route

	mu         sync.Mutex
	routes     map[string]RunFunc
	base       []string
	containers map[string]*container
	started    int
	unknown    []string
}

type container struct {
	id, name string
	cmd, env []string
	state    string // created, running, exited
	exit     int
	cancel   context.CancelFunc
	done     chan struct{}
}

// RouteEnv is the container environment variable that picks a Route's
// RunFunc.
const RouteEnv = "BENCH_TEST_DOCKER_ROUTE"

// NewDocker serves the fake Docker API until Close. Containers run with
// run, or with the RunFunc of the Route their RouteEnv names.
func NewDocker(run RunFunc) *Docker {
	d := &Docker{run: run, containers: map[string]*container{}, routes: map[string]RunFunc{}}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	return d
}

// Route runs the containers whose RouteEnv is name with run.
func (d *Docker) Route(name string, run RunFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.routes[name] = run
}

// Close kills the containers still running and stops serving.
func (d *Docker) Close() {
	d.mu.Lock()
	var running []*container
	for _, c := range d.containers {
		if c.cancel != nil {
			c.cancel()
			running = append(running, c)
		}
	}
	unknown := d.unknown
	d.mu.Unlock()
	for _, c := range running {
		<-c.done
	}
	d.srv.Close()
	if len(unknown) > 0 {
		fmt.Fprintf(os.Stderr, "fake docker: requests it does not serve: %v\n", unknown)
	}
}

// Host is the DOCKER_HOST value for moto.
func (d *Docker) Host() string { return "tcp://" + d.srv.Listener.Addr().String() }

// SetBaseEnv sets the environment every container starts with.
func (d *Docker) SetBaseEnv(env []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.base = env
}

// Started is how many containers were started.
func (d *Docker) Started() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started
}

var (
	apiVersion = regexp.MustCompile(`^/v[0-9.]+/`)
	byID       = regexp.MustCompile(`^/containers/([^/]+)(/[a-z]+)?$`)
)

func (d *Docker) serve(w http.ResponseWriter, r *http.Request) {
	path := apiVersion.ReplaceAllString(r.URL.Path, "/")
	reply := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	switch {
	case path == "/_ping":
		_, _ = w.Write([]byte("OK"))
		return
	case path == "/version":
		reply(200, map[string]any{"ApiVersion": "1.44", "MinAPIVersion": "1.24", "Version": "25.0.0-bench-fake", "Os": "linux", "Arch": "amd64"})
		return
	case path == "/containers/create" && r.Method == http.MethodPost:
		var body struct {
			Cmd []string
			Env []string
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			reply(400, map[string]any{"message": err.Error()})
			return
		}
		d.mu.Lock()
		id := fmt.Sprintf("c%06d", len(d.containers)+1)
		d.containers[id] = &container{id: id, name: r.URL.Query().Get("name"), cmd: body.Cmd, env: body.Env, state: "created"}
		d.mu.Unlock()
		reply(201, map[string]any{"Id": id, "Warnings": []string{}})
		return
	}
	m := byID.FindStringSubmatch(path)
	if m == nil {
		d.notServed(w, r)
		return
	}
	d.mu.Lock()
	c := d.containers[m[1]]
	var done chan struct{}
	var cancel context.CancelFunc
	if c != nil {
		done, cancel = c.done, c.cancel
	}
	d.mu.Unlock()
	if c == nil {
		reply(404, map[string]any{"message": "no such container: " + m[1]})
		return
	}
	switch {
	case m[2] == "/json" && r.Method == http.MethodGet:
		d.mu.Lock()
		v := map[string]any{
			"Id": c.id, "Name": "/" + c.name,
			"State":           map[string]any{"Status": c.state, "Running": c.state == "running", "ExitCode": c.exit},
			"Config":          map[string]any{"Tty": true, "Cmd": c.cmd, "Env": c.env, "Image": "bench:test"},
			"NetworkSettings": map[string]any{"Networks": map[string]any{}, "IPAddress": "127.0.0.1"},
		}
		d.mu.Unlock()
		reply(200, v)
	case m[2] == "/start" && r.Method == http.MethodPost:
		d.start(c)
		w.WriteHeader(http.StatusNoContent)
	case m[2] == "/logs" && r.Method == http.MethodGet:
		// The "container" writes where the test's RunFunc puts it; moto
		// gets no log lines (it would copy them to CloudWatch Logs).
		w.WriteHeader(200)
	case m[2] == "/wait" && r.Method == http.MethodPost:
		if done != nil {
			select {
			case <-done:
			case <-r.Context().Done():
				return
			}
		}
		d.mu.Lock()
		code := c.exit
		d.mu.Unlock()
		reply(200, map[string]any{"StatusCode": code})
	case m[2] == "/kill" && r.Method == http.MethodPost:
		if cancel != nil {
			cancel()
			<-done
		}
		w.WriteHeader(http.StatusNoContent)
	case m[2] == "" && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		d.notServed(w, r)
	}
}

func (d *Docker) notServed(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.unknown = append(d.unknown, r.Method+" "+r.URL.Path)
	d.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"message":"not served by the bench test's fake docker"}`))
}

// start runs the container's command with the RunFunc.
func (d *Docker) start(c *container) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.state != "created" {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done, c.state = cancel, make(chan struct{}), "running"
	d.started++
	env := append(append([]string(nil), d.base...), c.env...)
	run := d.run
	if route, ok := Lookup(env, RouteEnv); ok {
		run = d.routes[route]
	}
	go func() {
		defer close(c.done)
		code := 127 // no such command
		if run != nil {
			code = run(ctx, c.cmd, env)
		}
		if ctx.Err() != nil && code == 0 {
			code = 137
		}
		d.mu.Lock()
		c.state, c.exit = "exited", code
		d.mu.Unlock()
	}()
}

// Lookup returns the value of a variable in env (the last one wins, as in
// a process environment built by appending).
func Lookup(env []string, name string) (string, bool) {
	val, ok := "", false
	for _, kv := range env {
		if k, v, found := strings.Cut(kv, "="); found && k == name {
			val, ok = v, true
		}
	}
	return val, ok
}
