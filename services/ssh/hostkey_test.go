package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/benchtune/bench/services"
)

// hostKeyOf reads the real host key from the fixture's known_hosts file.
func hostKeyOf(t *testing.T, e sshEnv) ssh.PublicKey {
	t.Helper()
	data, err := os.ReadFile(e.knownHosts)
	if err != nil {
		t.Fatal(err)
	}
	_, _, key, _, _, err := ssh.ParseKnownHosts(data)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func otherKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// logCapture collects slog records while a test runs.
type logCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r)
	return nil
}
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCapture) WithGroup(string) slog.Handler      { return l }

func (l *logCapture) count(level slog.Level, sub string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, sub) {
			n++
		}
	}
	return n
}

func (l *logCapture) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, r := range l.recs {
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		b.WriteString("\n")
	}
	return b.String()
}

func captureLogs(t *testing.T) *logCapture {
	t.Helper()
	l := &logCapture{}
	old := slog.Default()
	slog.SetDefault(slog.New(l))
	t.Cleanup(func() { slog.SetDefault(old) })
	return l
}

func TestHostKeyVerification(t *testing.T) {
	e := getEnv(t)
	real := hostKeyOf(t, e)
	addr := "[" + e.host + "]:" + strconv.Itoa(e.port)
	tests := []struct {
		name       string
		knownHosts string // file content; "-" for no file
		insecure   bool
		wantErr    []string
		unknown    bool
	}{
		{name: "known", knownHosts: knownhosts.Line([]string{addr}, real) + "\n"},
		{name: "hashed entry", knownHosts: knownhosts.Line([]string{knownhosts.HashHostname(addr)}, real) + "\n"},
		{
			name:       "known among other key types",
			knownHosts: knownhosts.Line([]string{"other.example"}, otherKey(t)) + "\n" + knownhosts.Line([]string{addr}, real) + "\n",
		},
		{
			name: "unknown host", knownHosts: knownhosts.Line([]string{"other.example"}, real) + "\n", unknown: true,
			wantErr: []string{"not in known_hosts file", "ssh-keyscan -p " + strconv.Itoa(e.port) + " " + e.host + " >> ", ssh.FingerprintSHA256(real)},
		},
		{
			name: "empty file", knownHosts: "", unknown: true,
			wantErr: []string{"not in known_hosts file", "ssh-keyscan"},
		},
		{
			name: "changed key", knownHosts: knownhosts.Line([]string{addr}, otherKey(t)) + "\n",
			wantErr: []string{"HOST KEY MISMATCH", "ssh-keygen -R '" + addr + "'", ":1 (ssh-ed25519 key SHA256:"},
		},
		{
			name: "revoked key", knownHosts: "@revoked * " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(real))) + "\n" + knownhosts.Line([]string{addr}, real) + "\n",
			wantErr: []string{"is marked @revoked"},
		},
		{name: "no file", knownHosts: "-", wantErr: []string{"does not exist", "ssh-keyscan -p"}},
		{name: "insecure", knownHosts: "", insecure: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureLogs(t)
			kh := filepath.Join(t.TempDir(), "known_hosts")
			if tc.knownHosts != "-" {
				if err := os.WriteFile(kh, []byte(tc.knownHosts), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := newHost(t, e, func(c *Config) { c.KnownHostsPath = kh; c.InsecureIgnoreHostKey = tc.insecure })
			for i := 0; i < 2; i++ { // a new connection each time
				res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"echo in"}, Params: e.params()})
				if len(tc.wantErr) == 0 {
					if err != nil || res.Stdout != "in\n" {
						t.Fatalf("RemoteExec: %v", err)
					}
					s.pool.dropAll()
					continue
				}
				if err == nil {
					t.Fatal("connected to a host whose key is not trusted")
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				var hk *HostKeyError
				if tc.knownHosts != "-" && (!errors.As(err, &hk) || hk.Unknown() != tc.unknown) {
					t.Errorf("error %v: not a HostKeyError with Unknown()=%v", err, tc.unknown)
				}
			}
			if got := logs.count(slog.LevelWarn, "host key verification is OFF"); tc.insecure && got < 3 || !tc.insecure && got != 0 {
				t.Errorf("%d insecure-mode warnings; logs:\n%s", got, logs.all())
			}
		})
	}
}

// TestHostKeyAlgorithms checks that a host with an RSA key recorded is
// asked for that key even though it prefers another type.
func TestHostKeyAlgorithmsFromKnownHosts(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	tg := mustTarget(t, s, e)
	_, algos, err := s.cfg.hostKeyPolicy(tg)
	if err != nil {
		t.Fatal(err)
	}
	if len(algos) != 1 || algos[0] != ssh.KeyAlgoED25519 {
		t.Errorf("algorithms %v, want [%s]", algos, ssh.KeyAlgoED25519)
	}
	if got := algorithmsFor(ssh.KeyAlgoRSA); len(got) != 3 || got[0] != ssh.KeyAlgoRSASHA512 {
		t.Errorf("RSA algorithms %v", got)
	}
}

func TestAuthentication(t *testing.T) {
	e := getEnv(t)
	dir := t.TempDir()
	keygen := func(name, pass string) string {
		p := filepath.Join(dir, name)
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", pass, "-f", p).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v %s", err, out)
		}
		return p
	}
	encrypted := keygen("enc", "secret passphrase")
	stranger := keygen("stranger", "")
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}

	// An agent holding the fixture's client key.
	keyData, err := os.ReadFile(e.key)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := ssh.ParseRawPrivateKey(keyData)
	if err != nil {
		t.Fatal(err)
	}
	ring := agent.NewKeyring()
	if err := ring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(ring, c); _ = c.Close() }()
		}
	}()

	tests := []struct {
		name    string
		key     string
		agent   bool
		wantErr string
	}{
		{name: "key file", key: e.key},
		{name: "agent only", agent: true},
		{name: "encrypted key with the right key in the agent", key: encrypted, agent: true},
		{name: "encrypted key, no agent", key: encrypted, wantErr: "is protected by a passphrase, which bench cannot ask for: load it into ssh-agent (ssh-add " + encrypted},
		{name: "missing key", key: filepath.Join(dir, "nope"), wantErr: "ssh_priv_key_path " + filepath.Join(dir, "nope") + " does not exist"},
		{name: "not a key", key: garbage, wantErr: "private key " + garbage + " cannot be used"},
		{name: "key not authorized", key: stranger, wantErr: "was refused (offered key " + stranger + "): check that the public key is in the user's authorized_keys"},
		{name: "no key at all", wantErr: "no SSH key to log in to"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", dir) // no default keys
			if tc.agent {
				t.Setenv("SSH_AUTH_SOCK", sock)
			} else {
				t.Setenv("SSH_AUTH_SOCK", "")
			}
			s := newHost(t, e, func(c *Config) { c.PrivKeyPath = tc.key })
			res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"echo in"}, Params: e.params()})
			if tc.wantErr == "" {
				if err != nil || res.Stdout != "in\n" {
					t.Fatalf("RemoteExec: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret passphrase") {
				t.Error("the error holds the passphrase")
			}
		})
	}
}

func TestConnectTimeout(t *testing.T) {
	e := getEnv(t)
	// A listener that never speaks SSH: the handshake must give up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	s := newHost(t, e, func(c *Config) { c.ConnectTimeout = 500 * 1e6; c.InsecureIgnoreHostKey = true })
	p := services.Params{"ssh_hostname": "127.0.0.1", "ssh_port": int64(ln.Addr().(*net.TCPAddr).Port)}
	_, err = s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"true"}, Params: p})
	if err == nil || !strings.Contains(err.Error(), "no connection within ssh_connect_timeout (500ms)") {
		t.Fatalf("err = %v", err)
	}
	// A closed port fails at once, with the address in the message.
	_ = ln.Close()
	_, err = s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"true"}, Params: p})
	if err == nil || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), e.user+"@127.0.0.1:") {
		t.Fatalf("err = %v", err)
	}
}

// Trust on first use (ssh_strict_host_key_checking: accept-new) against
// the real sshd: the first connection records the host's key (creating
// the file and its folder), later ones verify it, a changed key is still
// refused, and the default still refuses an unknown host, saying how to
// turn the mode on.
func TestHostKeyAcceptNew(t *testing.T) {
	e := getEnv(t)
	real := hostKeyOf(t, e)
	addr := "[" + e.host + "]:" + strconv.Itoa(e.port)
	run := func(s *HostService) error {
		t.Helper()
		defer s.pool.dropAll() // a new connection each time
		res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"echo in"}, Params: e.params()})
		if err == nil && res.Stdout != "in\n" {
			t.Fatalf("RemoteExec: %+v", res)
		}
		return err
	}
	acceptNew := func(kh string) func(*Config) {
		return func(c *Config) { c.KnownHostsPath = kh; c.StrictHostKeyChecking = HostKeyAcceptNew }
	}

	t.Run("records then verifies", func(t *testing.T) {
		logs := captureLogs(t)
		// ssh_known_hosts_path null, as in mlos_bench's shipped configs:
		// the default file, ~/.ssh/known_hosts.
		home := t.TempDir()
		t.Setenv("HOME", home)
		s := newHost(t, e, func(c *Config) { c.KnownHostsPath = DefaultKnownHostsPath; c.StrictHostKeyChecking = HostKeyAcceptNew })
		if err := run(s); err != nil {
			t.Fatalf("first connection: %v", err)
		}
		kh := filepath.Join(home, ".ssh", "known_hosts")
		data, err := os.ReadFile(kh)
		if err != nil {
			t.Fatal(err)
		}
		if want := knownhosts.Line([]string{addr}, real) + "\n"; string(data) != want {
			t.Errorf("known_hosts holds %q, want %q", data, want)
		}
		for path, mode := range map[string]os.FileMode{kh: 0o600, filepath.Dir(kh): 0o700 | os.ModeDir} {
			if fi, err := os.Stat(path); err != nil || fi.Mode() != mode {
				t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, mode)
			}
		}
		if n := logs.count(slog.LevelWarn, "SSH host seen for the first time"); n != 1 || !strings.Contains(logs.all(), ssh.FingerprintSHA256(real)) {
			t.Errorf("%d first-use warnings, or no fingerprint; logs:\n%s", n, logs.all())
		}
		if err := run(s); err != nil {
			t.Fatalf("second connection: %v", err)
		}
		// Checked against the recorded key: nothing is added or logged.
		again, _ := os.ReadFile(kh)
		if string(again) != string(data) || logs.count(slog.LevelWarn, "SSH host seen for the first time") != 1 {
			t.Errorf("the second connection recorded the key again:\n%s\nlogs:\n%s", again, logs.all())
		}
		// A verified host is also verified without the mode.
		if err := run(newHost(t, e, func(c *Config) { c.KnownHostsPath = kh })); err != nil {
			t.Errorf("strict check against the recorded key: %v", err)
		}
	})

	t.Run("appends to an existing file", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		other := knownhosts.Line([]string{"other.example"}, otherKey(t)) + "\n"
		if err := os.WriteFile(kh, []byte(other), 0o600); err != nil {
			t.Fatal(err)
		}
		// Several connections at once record the key once.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = run(newHost(t, e, acceptNew(kh))) }()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		data, _ := os.ReadFile(kh)
		if want := other + knownhosts.Line([]string{addr}, real) + "\n"; string(data) != want {
			t.Errorf("known_hosts holds %q, want %q", data, want)
		}
	})

	t.Run("changed key refused", func(t *testing.T) {
		logs := captureLogs(t)
		kh := filepath.Join(t.TempDir(), "known_hosts")
		wrong := knownhosts.Line([]string{addr}, otherKey(t)) + "\n"
		if err := os.WriteFile(kh, []byte(wrong), 0o600); err != nil {
			t.Fatal(err)
		}
		err := run(newHost(t, e, acceptNew(kh)))
		var hk *HostKeyError
		if err == nil || !errors.As(err, &hk) || !strings.Contains(err.Error(), "HOST KEY MISMATCH") {
			t.Fatalf("a changed key must be refused, got %v", err)
		}
		if data, _ := os.ReadFile(kh); string(data) != wrong {
			t.Errorf("known_hosts changed: %q", data)
		}
		if logs.count(slog.LevelWarn, "SSH host seen for the first time") != 0 {
			t.Errorf("logs:\n%s", logs.all())
		}
	})

	t.Run("default refuses and says how to turn it on", func(t *testing.T) {
		dir := t.TempDir()
		for name, content := range map[string]string{"no file": "-", "unknown host": ""} {
			kh := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			if content != "-" {
				if err := os.WriteFile(kh, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := run(newHost(t, e, func(c *Config) { c.KnownHostsPath = kh }))
			if err == nil || !strings.Contains(err.Error(), `set "ssh_strict_host_key_checking": "accept-new" in the SSH service config`) {
				t.Errorf("%s: error %v does not say how to trust on first use", name, err)
			}
			if data, _ := os.ReadFile(kh); string(data) != content && content != "-" {
				t.Errorf("%s: known_hosts changed: %q", name, data)
			}
			if _, err := os.Stat(kh); content == "-" && err == nil {
				t.Errorf("%s: the default mode created %s", name, kh)
			}
		}
	})
}
