package sshpool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
)

// trialRequest is a request as engines.Runner builds it (the driver's
// arguments and claim, the runner's id, the trial's values and globals),
// with the fake bench's "id" and "sleep".
func trialRequest(t *testing.T, id string, sleep int, owner string, runner int, args []string, x string) []byte {
	t.Helper()
	req := engines.Request{ExperimentID: "E", TrialID: 4, RunnerID: runner, Args: args, Dir: "/work/exp",
		Params: map[string]string{"x": x}, Owner: owner,
		Globals: map[string]any{"experiment_id": "E", "trial_id": 4, "trial_runner_id": runner}}
	var m map[string]any
	if err := json.Unmarshal(req.Encode(), &m); err != nil {
		t.Fatal(err)
	}
	m["id"], m["sleep"] = id, sleep
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResubmitOtherArgs: a bench killed after starting a job but before
// recording it is restarted with other launcher arguments (a log level)
// and hands the trial to another runner: the new engine re-attaches to
// the run instead of replacing it, so the trial runs once. (The flake of
// TestSSHPoolKillAndReattach, cmd/bench: its restart adds --log_level.)
func TestResubmitOtherArgs(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, ""), e.hostAt(e.port2, 1, "")})
	args := []string{"--environment", "env.jsonc", "--experiment_id", "E", "--no-progress"}
	p.submit("bench-args-0", 3) // the first host is busy: the job goes to the second
	b1, err := p.Submit(context.Background(), engines.Job{Name: "bench-args-1", Request: trialRequest(t, "bench-args-1", 1, "driver-1", 2, args, "1")})
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := decodeRef(b1)
	p.waitPhase(b1, func(ph engines.Phase) bool { return ph >= engines.Running }, 20*time.Second)
	_ = p.Engine.Close()

	q := restartedPool(t, e, p, e.port, e.port2, e.knownHosts)
	b2, err := q.Submit(context.Background(), engines.Job{Name: "bench-args-1",
		Request: trialRequest(t, "bench-args-1", 1, "driver-2", 1, append(args, "--log_level", "INFO"), "1")})
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := decodeRef(b2)
	if r2.Host != r1.Host || r2.Run != r1.Run {
		t.Errorf("resubmitted job at %s %s, want the earlier run %s %s", r2.Host, r2.Run, r1.Host, r1.Run)
	}
	if st := q.waitPhase(b2, isFinal, 30*time.Second); st.Phase != engines.Done {
		t.Fatalf("%+v", st)
	}
	if n := q.runs("bench-args-1"); n != 1 {
		t.Errorf("the job ran %d times, want once", n)
	}
}

// TestAdoptOnHostNotReachedAtFirst: after a restart, the host that holds
// the earlier run cannot be reached when the engine first looks at every
// host (prepareAll), and can a moment later. The engine looks at it again
// before placing the job, finds the run and re-attaches to it, instead of
// starting the job a second time on the other host: prepareAll tries a
// host twice; a later Submit prepares a host still not prepared.
func TestAdoptOnHostNotReachedAtFirst(t *testing.T) {
	e := getEnv(t)
	for _, c := range []struct {
		name  string
		drop  int  // connections the proxy drops
		other bool // another job is submitted (and ends) first
	}{
		{"prepareAll tries again", 1, false},
		{"a later Submit looks", 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, ""), e.hostAt(e.port2, 1, "")})
			req := trialRequest(t, "bench-late-1", 2, "driver-1", 1, []string{"--environment", "env.jsonc"}, "1")
			p.submit("bench-late-0", 3) // the first host is busy: the job goes to the second
			b1, err := p.Submit(context.Background(), engines.Job{Name: "bench-late-1", Request: req})
			if err != nil {
				t.Fatal(err)
			}
			r1, _ := decodeRef(b1)
			if !strings.HasSuffix(r1.Host, fmt.Sprintf(":%d", e.port2)) {
				t.Fatalf("job on %s, want the second host", r1.Host)
			}
			p.waitPhase(b1, func(ph engines.Phase) bool { return ph >= engines.Running }, 20*time.Second)
			_ = p.Engine.Close()

			// The second host, behind a proxy that drops its first
			// connections.
			px := startFlakyProxy(t, fmt.Sprintf("127.0.0.1:%d", e.port2), c.drop)
			kh := knownHostsWith(t, e, e.port2, px.port)
			q := restartedPool(t, e, p, e.port, px.port, kh)
			if c.other {
				// Placed on the first host (the second cannot be reached);
				// it ends, so that the first host is free and preferred
				// (no failures) when the job comes.
				b, r := q.submit("bench-late-2", 0)
				if r.Host != q.hosts[0].addr {
					t.Fatalf("the other job went to %s, want %s", r.Host, q.hosts[0].addr)
				}
				q.waitPhase(b, isFinal, 30*time.Second)
				if hs := q.Hosts(); hs[1].Failures != 1 {
					t.Fatalf("host states %+v: want one failure of the second host", hs)
				}
			}
			b2, err := q.Submit(context.Background(), engines.Job{Name: "bench-late-1", Request: req})
			if err != nil {
				t.Fatal(err)
			}
			r2, _ := decodeRef(b2)
			if r2.Host != q.hosts[1].addr || r2.Run != r1.Run {
				t.Errorf("resubmitted job at %s %s, want the earlier run %s %s", r2.Host, r2.Run, q.hosts[1].addr, r1.Run)
			}
			if st := q.waitPhase(b2, isFinal, 30*time.Second); st.Phase != engines.Done {
				t.Fatalf("%+v", st)
			}
			if n := q.runs("bench-late-1"); n != 1 {
				t.Errorf("the job ran %d times, want once", n)
			}
			if n := px.conns.Load(); n <= int64(c.drop) {
				t.Errorf("the proxy saw %d connections, want the %d dropped ones and another", n, c.drop)
			}
			if hs := q.Hosts(); hs[1].Failures != 0 {
				t.Errorf("host states %+v: want the second host's failures cleared once it answered", hs)
			}
		})
	}
}

// TestSubmitOnAdoptsRunThere: a submission placed on a host that already
// holds a started run of the same job, attempt and request takes that run
// (it neither rewrites its request nor replaces it).
func TestSubmitOnAdoptsRunThere(t *testing.T) {
	e := getEnv(t)
	p := newPool(t, e, []HostConfig{e.hostAt(e.port, 1, "")})
	req := trialRequest(t, "bench-there-1", 2, "driver-1", 1, nil, "1")
	b1, err := p.Submit(context.Background(), engines.Job{Name: "bench-there-1", Request: req})
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := decodeRef(b1)
	p.waitPhase(b1, func(ph engines.Phase) bool { return ph >= engines.Running }, 20*time.Second)
	_ = p.Engine.Close()

	q := restartedPool(t, e, p, e.port, 0, e.knownHosts)
	var r ref
	adopted := false
	job := engines.Job{Name: "bench-there-1", Request: trialRequest(t, "bench-there-1", 2, "driver-2", 1, nil, "1")}
	if err := q.submitOn(context.Background(), q.hosts[0], "bench-there-1.0", job, &r, &adopted); err != nil {
		t.Fatal(err)
	}
	if !adopted || r.Run != r1.Run {
		t.Fatalf("submitOn: adopted %v, run %s; want the earlier run %s taken", adopted, r.Run, r1.Run)
	}
	b2, _ := json.Marshal(r)
	if st := q.waitPhase(b2, isFinal, 30*time.Second); st.Phase != engines.Done {
		t.Fatalf("%+v", st)
	}
	if n := q.runs("bench-there-1"); n != 1 {
		t.Errorf("the job ran %d times, want once", n)
	}
}

// restartedPool is a fresh engine (a restarted bench) on p's work
// folders: h1 on port1 and, when port2 is not 0, h2 on port2.
func restartedPool(t *testing.T, e sshEnv, p *pool, port1, port2 int, knownHosts string) *pool {
	t.Helper()
	hosts := []HostConfig{e.hostAt(port1, 1, path.Join(p.root, "h1"))}
	if port2 != 0 {
		hosts = append(hosts, e.hostAt(port2, 1, path.Join(p.root, "h2")))
	}
	cfg := Config{Hosts: hosts, KnownHostsFile: knownHosts, StrictHostKeyChecking: true, MaxHostFailures: 3,
		HostCooldown: time.Minute, ConnectTimeout: 5 * time.Second}
	q, err := New(cfg, p.common)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	return &pool{Engine: q, t: t, root: p.root}
}

// runs counts the fake bench's runs of a job on both hosts.
func (p *pool) runs(id string) int {
	return strings.Count(p.read("h1/runs.log")+p.read("h2/runs.log"), id+" ")
}

// knownHostsWith is the fixture's known_hosts plus the key of the sshd
// on port under the proxy's port.
func knownHostsWith(t *testing.T, e sshEnv, port, proxyPort int) string {
	t.Helper()
	data, err := os.ReadFile(e.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	prefix := fmt.Sprintf("[%s]:%d ", e.host, port)
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			out += fmt.Sprintf("\n[%s]:%d %s\n", e.host, proxyPort, rest)
		}
	}
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	return kh
}

// flakyProxy forwards TCP connections to an sshd, closing the first drop
// of them at once (a host that does not answer for a moment).
type flakyProxy struct {
	port  int
	conns atomic.Int64
}

func startFlakyProxy(t *testing.T, to string, drop int) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &flakyProxy{port: ln.Addr().(*net.TCPAddr).Port}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if px.conns.Add(1) <= int64(drop) {
				_ = c.Close()
				continue
			}
			up, err := net.Dial("tcp", to)
			if err != nil {
				_ = c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, up)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(up, c); _ = up.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(c, up); _ = c.Close() }()
		}
	}()
	return px
}
