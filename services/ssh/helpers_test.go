package ssh

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/internal/testutil"
	"github.com/benchtune/bench/services"
)

// sshEnv holds the coordinates of the sshd that scripts/testenv/sshd.sh
// started.
type sshEnv struct {
	host, user, key, knownHosts string
	port                        int
}

func getEnv(t testing.TB) sshEnv {
	t.Helper()
	e := sshEnv{
		host:       testenv.Get(t, "BENCH_TEST_SSH_HOST"),
		user:       testenv.Get(t, "BENCH_TEST_SSH_USER"),
		key:        testenv.Get(t, "BENCH_TEST_SSH_KEY"),
		knownHosts: testenv.Get(t, "BENCH_TEST_SSH_KNOWN_HOSTS"),
	}
	p, err := strconv.Atoi(testenv.Get(t, "BENCH_TEST_SSH_PORT"))
	if err != nil {
		t.Fatalf("BENCH_TEST_SSH_PORT: %v", err)
	}
	e.port = p
	return e
}

func (e sshEnv) config() Config {
	c := DefaultConfig()
	c.Port = e.port
	c.Username = e.user
	c.PrivKeyPath = e.key
	c.KnownHostsPath = e.knownHosts
	c.ConnectTimeout = 10 * time.Second
	return c
}

func (e sshEnv) params() services.Params { return services.Params{"ssh_hostname": e.host} }

// fastTuning shortens the protocol's timings for tests.
func fastTuning() tuning {
	tu := defaultTuning()
	tu.pollMax = 100 * time.Millisecond
	tu.reconnectWindow = 20 * time.Second
	tu.cleanupTimeout = 30 * time.Second
	tu.killGrace = time.Second
	tu.livenessEvery = 300 * time.Millisecond
	return tu
}

func newHost(t testing.TB, e sshEnv, mod ...func(*Config)) *HostService {
	t.Helper()
	cfg := e.config()
	for _, m := range mod {
		m(&cfg)
	}
	s, err := NewHostService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.tuning = fastTuning()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// sh runs a script on the test host with a separate service and returns
// its stdout; it fails the test on errors or a non-zero exit.
func sh(t *testing.T, e sshEnv, script ...string) string {
	t.Helper()
	s := newHost(t, e)
	res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: script, Params: e.params(), CommandName: "test-helper"})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("helper script %q: exit %d, err %v, stderr %s", script, res.ExitCode, err, res.Stderr)
	}
	return res.Stdout
}

// syncBuffer is a goroutine-safe buffer that can wait for content.
type syncBuffer struct{ testutil.SyncBuffer }

func (s *syncBuffer) waitFor(t *testing.T, sub string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(s.String(), sub) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q in live output; have %q", sub, s.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func uniq(t *testing.T) string {
	t.Helper()
	return strings.TrimSuffix(newRunID("")[16:], "-")
}
