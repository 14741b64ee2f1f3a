package ssh

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/capture"
	"github.com/benchtune/bench/internal/shellenv"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/benchtune/bench/services"
)

func TestRemoteExec(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	tests := []struct {
		name       string
		script     []string
		env        map[string]string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "success", script: []string{"echo hello"}, wantStdout: "hello\n"},
		{name: "exit code and both streams", script: []string{"echo out", "echo err >&2", "exit 3"}, wantCode: 3, wantStdout: "out\n", wantStderr: "err\n"},
		{name: "lines share one shell", script: []string{"cd /tmp", "X=kept", "pwd", "echo $X"}, wantStdout: "/tmp\nkept\n"},
		{name: "last line's code", script: []string{"false", "true"}, wantCode: 0},
		{name: "failing command", script: []string{"ls /nonexistent-dir-for-bench"}, wantCode: 2, wantStderr: "ls: cannot access '/nonexistent-dir-for-bench': No such file or directory\n"},
		{name: "bash by default", script: []string{`[ -n "$BASH_VERSION" ] && echo bash`}, wantStdout: "bash\n"},
		{name: "starts in the login directory", script: []string{`[ "$(pwd)" = "$HOME" ] && echo home`}, wantStdout: "home\n"},
		{name: "env", script: []string{`echo "$GREETING, $NAME"`}, env: map[string]string{"GREETING": "hi", "NAME": "bench"}, wantStdout: "hi, bench\n"},
		{name: "no output", script: []string{"true"}},
		{name: "no trailing newline", script: []string{"printf abc"}, wantStdout: "abc"},
		// /bin/sh, which runs the script, reports the signal.
		{name: "killed by a signal", script: []string{"kill -9 $$"}, wantCode: 137, wantStderr: "Killed\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "test-" + uniq(t)
			res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
				Script: tc.script, Env: tc.env, Params: e.params(), CommandName: name,
			})
			if err != nil {
				t.Fatalf("RemoteExec: %v", err)
			}
			got := []any{res.ExitCode, res.Stdout, res.Stderr, len(res.Lines)}
			want := []any{tc.wantCode, tc.wantStdout, tc.wantStderr, 1}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("exit code, stdout, stderr, lines (-want +got):\n%s", diff)
			}
			l := res.Lines[0]
			if l.ExitCode != res.ExitCode || l.Stdout != res.Stdout || l.TimedOut || l.Truncated || l.Duration <= 0 {
				t.Errorf("line result %+v does not match", l)
			}
			// The run directory is gone.
			if out := sh(t, e, "ls -a ~/.bench/runs"); strings.Contains(out, name) {
				t.Errorf("run directory of %s left behind:\n%s", name, out)
			}
		})
	}
	if n := s.pool.dials.Load(); n != 1 {
		t.Errorf("%d connections made for sequential runs, want 1 (cached)", n)
	}
}

func TestRemoteExecHostileEnv(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	dir := ".bench-test-" + uniq(t)
	sh(t, e, "mkdir -p "+dir)
	t.Cleanup(func() { sh(t, e, "rm -rf "+dir) })

	env := map[string]string{}
	var refs []string
	for i, v := range hostileValues {
		n := fmt.Sprintf("V_%d", i)
		env[n] = v
		refs = append(refs, `"$`+n+`"`)
	}
	res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
		Script: []string{"cd " + dir, `printf '%s\0' ` + strings.Join(refs, " "), "ls -A"},
		Env:    env, Params: e.params(), CommandName: "hostile",
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("RemoteExec: exit %d, %v, stderr %q", res.ExitCode, err, res.Stderr)
	}
	// printf's NUL-separated values, then ls's listing (must be empty).
	parts := strings.Split(res.Stdout, "\x00")
	listing := parts[len(parts)-1]
	if diff := cmp.Diff(hostileValues, parts[:len(parts)-1]); diff != "" {
		t.Errorf("values on the host (-want +got):\n%s", diff)
	}
	if listing != "" {
		t.Errorf("a value was executed: the directory holds %q", listing)
	}

	// Invalid names are refused before anything runs.
	marker := dir + "/ran"
	_, err = s.RemoteExec(context.Background(), services.RemoteExecRequest{
		Script: []string{"touch " + marker}, Env: map[string]string{"BAD;touch x": "v"}, Params: e.params(),
	})
	if err == nil || !strings.Contains(err.Error(), "invalid environment variable name") {
		t.Fatalf("invalid name: err = %v", err)
	}
	if out := sh(t, e, "ls -A "+dir); out != "" {
		t.Errorf("the script ran despite the invalid name: %q", out)
	}
}

func TestRemoteExecMissingHostname(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	_, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"true"}, Params: services.Params{"ssh_port": int64(e.port)}})
	if !errors.Is(err, ErrNoHostname) || !strings.Contains(err.Error(), "const_args") {
		t.Fatalf("err = %v, want ErrNoHostname with a hint", err)
	}
	if n := s.pool.dials.Load(); n != 0 {
		t.Errorf("%d connections made", n)
	}
}

func TestRemoteExecParamsOverrideConfig(t *testing.T) {
	e := getEnv(t)
	// The config names a wrong port and user; the params fix them.
	s := newHost(t, e, func(c *Config) { c.Port = 1; c.Username = "nobody-here" })
	p := e.params()
	p["ssh_port"] = int64(e.port)
	p["ssh_username"] = e.user
	res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"id -un"}, Params: p})
	if err != nil || res.Stdout != e.user+"\n" {
		t.Fatalf("RemoteExec: %v, stdout %q", err, res.Stdout)
	}
}

// remoteProcs lists the host's processes whose command line contains pat.
func remoteProcs(t *testing.T, e sshEnv, pat string) string {
	t.Helper()
	// The [x] trick keeps pgrep from matching the helper itself.
	return sh(t, e, fmt.Sprintf("pgrep -af '[%c]%s' || true", pat[0], pat[1:]))
}

func TestRemoteExecTimeoutKillsProcessGroup(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	tests := []struct {
		name   string
		script func(mark string) []string
		limit  time.Duration
		cfg    time.Duration // ssh_request_timeout
	}{
		{
			name: "request timeout",
			script: func(m string) []string {
				return []string{"sleep " + m + " &", "(sleep " + m + ") &", "echo started", "sleep " + m}
			},
			limit: time.Second,
		},
		{
			name:   "ssh_request_timeout",
			script: func(m string) []string { return []string{"echo started", "sleep " + m} },
			cfg:    time.Second,
		},
		{
			name: "script ignores SIGTERM",
			script: func(m string) []string {
				return []string{"trap '' TERM", "echo started", "sleep " + m + " &", "while :; do sleep 0.1; done"}
			},
			limit: time.Second,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := s
			if tc.cfg > 0 {
				svc = newHost(t, e, func(c *Config) { c.RequestTimeout = tc.cfg })
			}
			mark := fmt.Sprintf("4%d%d.%d", i, time.Now().UnixNano()%1000, time.Now().UnixNano()%100000)
			start := time.Now()
			res, err := svc.RemoteExec(context.Background(), services.RemoteExecRequest{
				Script: tc.script(mark), Params: e.params(), Timeout: tc.limit, CommandName: "timeout",
			})
			if !errors.Is(err, services.ErrTimeout) {
				t.Fatalf("err = %v, want ErrTimeout", err)
			}
			if !res.Lines[0].TimedOut || res.ExitCode != -1 || res.Stdout != "started\n" {
				t.Errorf("result: timed out %v, exit %d, stdout %q", res.Lines[0].TimedOut, res.ExitCode, res.Stdout)
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %s", d)
			}
			if left := remoteProcs(t, e, "sleep "+mark); left != "" {
				t.Errorf("processes left on the host:\n%s", left)
			}
		})
	}
}

func TestRemoteExecCancel(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	mark := fmt.Sprintf("5%d.%d", time.Now().Unix()%1000, time.Now().UnixNano()%10000)
	live := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.RemoteExec(ctx, services.RemoteExecRequest{
			Script: []string{"echo started", "sleep " + mark}, Params: e.params(), Live: live,
		})
		done <- err
	}()
	live.waitFor(t, "started\n", 20*time.Second)
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) || errors.Is(err, services.ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if left := remoteProcs(t, e, "sleep "+mark); left != "" {
		t.Errorf("processes left on the host:\n%s", left)
	}
}

func TestRemoteExecContextDeadline(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, err := s.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"sleep 30"}, Params: e.params()})
	if !errors.Is(err, services.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
}

// TestRemoteExecSurvivesDroppedConnection cuts the TCP connection twice in
// the middle of a run: the run goes on, is followed on a new connection,
// its output is complete and not duplicated, and it ran exactly once.
func TestRemoteExecSurvivesDroppedConnection(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	counter := ".bench-test-counter-" + uniq(t)
	t.Cleanup(func() { sh(t, e, "rm -f "+counter) })
	live := &syncBuffer{}
	const n = 60
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	type result struct {
		res services.ExecResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
			Script: []string{
				`n=$(cat ` + counter + ` 2>/dev/null || echo 0); echo $((n+1)) >` + counter,
				fmt.Sprintf(`for i in $(seq 1 %d); do echo "line $i"; echo "err $i" >&2; sleep 0.05; done`, n),
			},
			Params: e.params(), Live: live, CommandName: "reconnect",
		})
		done <- result{res, err}
	}()
	live.waitFor(t, "line 10\n", 30*time.Second)
	s.pool.dropAll()
	live.waitFor(t, "line 30\n", 30*time.Second)
	s.pool.dropAll()
	r := <-done
	if r.err != nil || r.res.ExitCode != 0 {
		t.Fatalf("RemoteExec: exit %d, %v", r.res.ExitCode, r.err)
	}
	if r.res.Stdout != want.String() {
		t.Errorf("stdout after reconnects:\n%s\nwant:\n%s", r.res.Stdout, want.String())
	}
	if got := strings.Count(r.res.Stderr, "\n"); got != n || !strings.HasPrefix(r.res.Stderr, "err 1\n") {
		t.Errorf("stderr has %d lines: %q", got, r.res.Stderr)
	}
	if got := strings.Count(live.String(), "line "); got != n {
		t.Errorf("live output has %d stdout lines, want %d", got, n)
	}
	if got := sh(t, e, "cat "+counter); got != "1\n" {
		t.Errorf("the script ran %q times, want once", got)
	}
	if d := s.pool.dials.Load(); d < 3 {
		t.Errorf("%d connections made, want at least 3 (two reconnects)", d)
	}
}

// TestStartIsIdempotent launches the same run several times, at once and
// in turn (as retries after broken connections would): it runs once.
func TestStartIsIdempotent(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	counter := ".bench-test-counter-" + uniq(t)
	t.Cleanup(func() { sh(t, e, "rm -f "+counter) })
	script, err := shellenv.Script(nil, []string{`n=$(cat ` + counter + ` 2>/dev/null || echo 0); echo $((n+1)) >` + counter, "echo ran"})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{svc: s, t: mustTarget(t, s, e), id: newRunID("idem"), name: "idem", script: script,
		stdout: capture.New(1<<10, 1<<10), stderr: capture.New(1<<10, 1<<10), liveOut: &lineWriter{}, liveErr: &lineWriter{}}
	ctx := context.Background()
	if err := r.do(ctx, "prepare", r.prepare); err != nil {
		t.Fatal(err)
	}
	r.startedAt = time.Now()
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		rc := *r // a run is not for concurrent use; copies share the directory
		go func() {
			defer wg.Done()
			if err := rc.do(ctx, "start", rc.start); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// A retried prepare after the start must not rewrite the script.
	if err := r.do(ctx, "prepare", r.prepare); err != nil {
		t.Fatal(err)
	}
	if err := r.do(ctx, "start", r.start); err != nil {
		t.Fatal(err)
	}
	for {
		code, done, _, err := r.poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			if code != 0 || r.stdout.String() != "ran\n" {
				t.Errorf("exit %d, stdout %q", code, r.stdout.String())
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.cleanup(ctx)
	if got := sh(t, e, "cat "+counter); got != "1\n" {
		t.Errorf("the script ran %q times, want once", got)
	}
}

func mustTarget(t testing.TB, s *HostService, e sshEnv) target {
	t.Helper()
	tg, err := s.cfg.resolveTarget(e.params())
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func TestRemoteExecConcurrent(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	const n = 10
	var wg sync.WaitGroup
	results := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
				Script: []string{"sleep 0.3", `echo "job $JOB"`, `echo "err $JOB" >&2`},
				Env:    map[string]string{"JOB": fmt.Sprint(i)}, Params: e.params(), CommandName: fmt.Sprintf("job-%d", i),
			})
			results[i], errs[i] = res.Stdout+res.Stderr, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("job %d: %v", i, errs[i])
		}
		if want := fmt.Sprintf("job %d\nerr %d\n", i, i); results[i] != want {
			t.Errorf("job %d output %q, want %q", i, results[i], want)
		}
	}
	if d := s.pool.dials.Load(); d != 1 {
		t.Errorf("%d connections made, want 1 shared connection", d)
	}
}

func TestRemoteExecOutputBounded(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	s.tuning.headBytes, s.tuning.tailBytes = 100, 100
	live := &syncBuffer{}
	res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
		Script: []string{"seq 1 20000", "echo small >&2"}, Params: e.params(), Live: live,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Lines[0].Truncated || !strings.HasPrefix(res.Stdout, "1\n2\n3\n") || !strings.HasSuffix(res.Stdout, "19999\n20000\n") ||
		!strings.Contains(res.Stdout, "bytes of output omitted") || len(res.Stdout) > 300 {
		t.Errorf("bounded stdout (%d bytes): %q", len(res.Stdout), res.Stdout)
	}
	if res.Stderr != "small\n" {
		t.Errorf("stderr %q", res.Stderr)
	}
	// Live output is not bounded: it saw every line.
	if got := strings.Count(live.String(), "\n"); got != 20001 {
		t.Errorf("live output has %d lines, want 20001", got)
	}
}

func TestRemoteExecShell(t *testing.T) {
	e := getEnv(t)
	tests := []struct {
		shell      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{shell: "/bin/sh", wantStdout: "not bash\n"},
		{shell: "/bin/bash", wantStdout: "bash\n"},
		{shell: "/nonexistent/shell", wantCode: 127, wantStderr: "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.shell, func(t *testing.T) {
			s := newHost(t, e, func(c *Config) { c.Shell = tc.shell })
			res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
				Script: []string{`if [ -n "$BASH_VERSION" ]; then echo bash; else echo not bash; fi`}, Params: e.params(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tc.wantCode || res.Stdout != tc.wantStdout || !strings.Contains(res.Stderr, tc.wantStderr) {
				t.Errorf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	e := getEnv(t)
	cfg := map[string]any{
		"ssh_port": float64(e.port), "ssh_username": e.user, "ssh_priv_key_path": e.key,
		"ssh_known_hosts_path": e.knownHosts, "ssh_request_timeout": 60.0, "ssh_keepalive_interval": 5.0,
	}
	for _, class := range []string{HostServiceClass, HostServiceClassFull} {
		svc, err := services.New(context.Background(), services.Spec{Class: class, Config: cfg})
		if err != nil {
			t.Fatalf("%s: %v", class, err)
		}
		hs := svc.(*HostService)
		res, err := hs.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"echo ok"}, Params: e.params()})
		if err != nil || res.Stdout != "ok\n" {
			t.Errorf("%s: %v %q", class, err, res.Stdout)
		}
		_ = hs.Close()
	}
	for _, class := range []string{FileShareServiceClass, FileShareServiceClassFull} {
		svc, err := services.New(context.Background(), services.Spec{Class: class, Config: cfg})
		if err != nil {
			t.Fatalf("%s: %v", class, err)
		}
		if _, ok := svc.(services.FileShare); !ok {
			t.Errorf("%s is no FileShare", class)
		}
		_ = svc.(*FileShareService).Close()
	}
	_, err := services.New(context.Background(), services.Spec{Class: FileShareServiceClass, Config: map[string]any{"ssh_shell": "/bin/sh"}})
	if err == nil || !strings.Contains(err.Error(), "/config/ssh_shell") {
		t.Errorf("ssh_shell on a file share: %v", err)
	}
}

func TestClosedService(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	_ = s.Close()
	_, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"true"}, Params: e.params()})
	if !errors.Is(err, errPoolClosed) {
		t.Errorf("after Close: %v", err)
	}
}

// freezingProxy forwards TCP connections to an sshd and can freeze the
// ones open so far: they stay open but carry nothing, like a network
// partition. New connections are forwarded normally.
type freezingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frozen []*atomic.Bool
	cur    []*atomic.Bool
	stop   chan struct{}
}

func newFreezingProxy(t *testing.T, target string) *freezingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezingProxy{ln: ln, target: target, stop: make(chan struct{})}
	t.Cleanup(func() { close(p.stop); _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			f := &atomic.Bool{}
			p.mu.Lock()
			p.cur = append(p.cur, f)
			p.mu.Unlock()
			go p.pipe(c, u, f)
			go p.pipe(u, c, f)
		}
	}()
	return p
}

func (p *freezingProxy) pipe(dst, src net.Conn, frozen *atomic.Bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if frozen.Load() {
			<-p.stop // hold the connection open, carrying nothing
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *freezingProxy) freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.cur {
		f.Store(true)
	}
	p.cur = nil
}

func (p *freezingProxy) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// TestRemoteExecSurvivesPartition freezes the connection in the middle of
// a run without closing it: keepalives notice, bench reconnects, and the
// run is followed to its end, once.
func TestRemoteExecSurvivesPartition(t *testing.T) {
	e := getEnv(t)
	px := newFreezingProxy(t, net.JoinHostPort(e.host, fmt.Sprint(e.port)))
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{fmt.Sprintf("[%s]:%d", e.host, px.port())}, hostKeyOf(t, e))
	if err := os.WriteFile(kh, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newHost(t, e, func(c *Config) { c.Port = px.port(); c.KnownHostsPath = kh; c.KeepaliveInterval = time.Second })
	s.tuning.opTimeout = 10 * time.Second // keepalives must be what notices
	counter := ".bench-test-counter-" + uniq(t)
	t.Cleanup(func() { sh(t, e, "rm -f "+counter) })
	live := &syncBuffer{}
	done := make(chan services.ExecResult, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
			Script: []string{
				`n=$(cat ` + counter + ` 2>/dev/null || echo 0); echo $((n+1)) >` + counter,
				`for i in $(seq 1 30); do echo "line $i"; sleep 0.1; done`,
			},
			Params: e.params(), Live: live,
		})
		done <- res
		errc <- err
	}()
	live.waitFor(t, "line 5\n", 30*time.Second)
	logs := captureLogs(t)
	px.freeze()
	res, err := <-done, <-errc
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if res.Stdout != want.String() {
		t.Errorf("stdout:\n%s", res.Stdout)
	}
	if got := sh(t, e, "cat "+counter); got != "1\n" {
		t.Errorf("the script ran %q times, want once", got)
	}
	if d := s.pool.dials.Load(); d != 2 {
		t.Errorf("%d connections, want 2", d)
	}
	if logs.count(slog.LevelWarn, "no answer to keepalive") != 1 {
		t.Errorf("the keepalives did not notice the partition; logs:\n%s", logs.all())
	}
}

// TestRemoteExecVanished kills a run's processes behind bench's back (as a
// host restart or the OOM killer would): bench notices that they are gone
// without an exit code instead of waiting forever, and keeps the files.
func TestRemoteExecVanished(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	mark := fmt.Sprintf("6%d.%d", time.Now().Unix()%1000, time.Now().UnixNano()%10000)
	live := &syncBuffer{}
	errc := make(chan error, 1)
	go func() {
		_, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{
			Script: []string{"echo started", "sleep " + mark}, Params: e.params(), Live: live, CommandName: "vanish",
		})
		errc <- err
	}()
	live.waitFor(t, "started\n", 20*time.Second)
	// "started" comes before the sleep: wait for the sleep to exist.
	sh(t, e, fmt.Sprintf(`for i in $(seq 100); do p=$(pgrep -o -f '^sleep %s') && break; sleep 0.1; done; pkill -KILL -s "$(ps -o sid= -p "$p" | tr -d ' ')"`, mark))
	select {
	case err := <-errc:
		if !errors.Is(err, errVanished) || !strings.Contains(err.Error(), "/.bench/runs/") {
			t.Fatalf("err = %v, want errVanished naming the run directory", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("RemoteExec did not notice that the script was gone")
	}
	out := sh(t, e, "cd ~/.bench/runs && for d in *-vanish-*; do cat $d/stdout; rm -rf $d; done")
	if out != "started\n" {
		t.Errorf("kept output %q", out)
	}
}

// TestRemoteExecTouchesActivity: output arriving from the remote host
// counts as the trial's activity (hang detection).
func TestRemoteExecTouchesActivity(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	act := services.NewActivity()
	start := act.LastActive()
	ctx := services.WithActivity(context.Background(), act)
	res, err := s.RemoteExec(ctx, services.RemoteExecRequest{
		Script: []string{"sleep 1; echo late"}, Params: e.params(), CommandName: "test-" + uniq(t),
	})
	if err != nil || res.Stdout != "late\n" {
		t.Fatalf("RemoteExec: %v %q", err, res.Stdout)
	}
	if d := act.LastActive().Sub(start); d < 900*time.Millisecond {
		t.Errorf("the output printed after 1s moved the last activity by %s only", d)
	}
}
