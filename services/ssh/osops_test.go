package ssh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/benchtune/bench/services"
)

// ownSshd is a second real sshd that a test may take down and bring back,
// standing in for a host that shuts down or reboots.
type ownSshd struct {
	t          *testing.T
	dir        string
	port       int
	knownHosts string
	mu         sync.Mutex
	cmd        *exec.Cmd
	starts     int
}

func startOwnSshd(t *testing.T, e sshEnv) *ownSshd {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("starting a second sshd needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, "hostkey")).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	keyData, err := os.ReadFile(e.key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(keyData)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %[2]s/hostkey
PidFile %[2]s/sshd.pid
AuthorizedKeysFile %[2]s/authorized_keys
AllowUsers %[3]s
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
`, port, dir, e.user)
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(filepath.Join(dir, "hostkey.pub"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte(fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, f[0], f[1])), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &ownSshd{t: t, dir: dir, port: port, knownHosts: kh}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *ownSshd) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command("/usr/sbin/sshd", "-D", "-f", filepath.Join(s.dir, "sshd_config"), "-E", filepath.Join(s.dir, "sshd.log"))
	if err := cmd.Start(); err != nil {
		s.t.Errorf("starting sshd: %v", err)
		return
	}
	s.cmd = cmd
	s.starts++
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port)); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Errorf("sshd on port %d did not come up", s.port)
}

// stop ends the listener; sessions already open go on, as they would for a
// moment on a host going down.
func (s *ownSshd) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

func (s *ownSshd) startCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starts
}

// onFlag runs fn once the file appears.
func onFlag(t *testing.T, flag string, fn func()) {
	go func() {
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(flag); err == nil {
				fn()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

func newOSHost(t *testing.T, e sshEnv, own *ownSshd, commands func(op string, force bool) []string) *HostService {
	s := newHost(t, e, func(c *Config) { c.Port = own.port; c.KnownHostsPath = own.knownHosts })
	s.os.commands = commands
	s.os.poll = 50 * time.Millisecond
	s.os.downTimeout = 5 * time.Second
	s.os.upTimeout = 10 * time.Second
	return s
}

func TestShutdown(t *testing.T) {
	e := getEnv(t)
	own := startOwnSshd(t, e)
	flagDir := filepath.Join(own.dir, "flags")
	if err := os.Mkdir(flagDir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(flagDir, 0o777)
	var gotForce []bool
	// The first command fails; the second one "powers off": it leaves a
	// flag and kills its own SSH session, so the connection drops without
	// an exit status, as when a host goes down.
	s := newOSHost(t, e, own, func(op string, force bool) []string {
		gotForce = append(gotForce, force)
		return []string{"false", "touch " + flagDir + "/" + op + "; kill -9 $(ps -o ppid= -p $PPID)"}
	})
	onFlag(t, flagDir+"/shutdown", own.stop)
	logs := captureLogs(t)
	start := time.Now()
	if err := s.Shutdown(context.Background(), e.params(), true); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if logs.count(slog.LevelDebug, "connection ended during shutdown") != 1 {
		t.Errorf("the dropped connection was not seen; logs:\n%s", logs.all())
	}
	if len(gotForce) != 1 || !gotForce[0] {
		t.Errorf("commands asked with force %v", gotForce)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s", d)
	}
	// The host is down: running anything fails now.
	if _, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"true"}, Params: e.params()}); err == nil {
		t.Error("RemoteExec worked on a host that is down")
	}
}

func TestReboot(t *testing.T) {
	e := getEnv(t)
	own := startOwnSshd(t, e)
	flagDir := filepath.Join(own.dir, "flags")
	if err := os.Mkdir(flagDir, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(flagDir, 0o777)
	s := newOSHost(t, e, own, func(op string, force bool) []string {
		return []string{"touch " + flagDir + "/" + op}
	})
	// Warm the cache: the old connection must not be mistaken for the
	// host being back.
	if _, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"true"}, Params: e.params()}); err != nil {
		t.Fatal(err)
	}
	onFlag(t, flagDir+"/reboot", func() {
		time.Sleep(200 * time.Millisecond)
		own.stop()
		time.Sleep(time.Second)
		own.start()
	})
	if err := s.Reboot(context.Background(), e.params(), false); err != nil {
		t.Fatalf("Reboot: %v", err)
	}
	if n := own.startCount(); n != 2 {
		t.Fatalf("Reboot returned with sshd started %d times, want 2 (it returned before the host came back)", n)
	}
	res, err := s.RemoteExec(context.Background(), services.RemoteExecRequest{Script: []string{"echo back"}, Params: e.params()})
	if err != nil || res.Stdout != "back\n" {
		t.Errorf("after the reboot: %v %q", err, res.Stdout)
	}
}

func TestOSOpsFailures(t *testing.T) {
	e := getEnv(t)
	own := startOwnSshd(t, e)
	tests := []struct {
		name     string
		commands []string
		op       func(*HostService) error
		wantErr  string
		timeout  bool
	}{
		{
			name: "no command works", commands: []string{"false", "echo 'shutdown: Permission denied' >&2; exit 1"},
			op:      func(s *HostService) error { return s.Shutdown(context.Background(), e.params(), false) },
			wantErr: "shutdown: Permission denied\nbench: none of the commands worked; this needs root or passwordless sudo",
		},
		{
			name: "host never goes down", commands: []string{"true"},
			op:      func(s *HostService) error { return s.Shutdown(context.Background(), e.params(), false) },
			wantErr: "the host still answers SSH", timeout: true,
		},
		{
			name: "host never reboots", commands: []string{"true"},
			op:      func(s *HostService) error { return s.Reboot(context.Background(), e.params(), false) },
			wantErr: "the host did not go down", timeout: true,
		},
		{
			name: "no hostname", commands: []string{"true"},
			op:      func(s *HostService) error { return s.Reboot(context.Background(), services.Params{}, false) },
			wantErr: `the "ssh_hostname" parameter is required`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newOSHost(t, e, own, func(string, bool) []string { return tc.commands })
			s.os.downTimeout, s.os.upTimeout = 500*time.Millisecond, 500*time.Millisecond
			err := tc.op(s)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, services.ErrTimeout) != tc.timeout {
				t.Fatalf("err = %v, want %q (timeout %v)", err, tc.wantErr, tc.timeout)
			}
		})
	}
}

// TestShutdownUnprivileged runs the real shutdown commands as the fixture's
// unprivileged user: all of them are refused, and the error says why. It
// only runs where that is certain (not root, no passwordless sudo).
func TestShutdownUnprivileged(t *testing.T) {
	e := getEnv(t)
	out := sh(t, e, `id -u; if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then echo sudo; else echo nosudo; fi`)
	if out != strings.TrimPrefix(out, "0\n") || !strings.HasSuffix(out, "nosudo\n") {
		t.Skipf("the test user could really shut the machine down (%q)", out)
	}
	s := newHost(t, e)
	s.os.downTimeout, s.os.upTimeout = time.Second, time.Second
	for _, force := range []bool{false, true} {
		err := s.Shutdown(context.Background(), e.params(), force)
		if err == nil || !strings.Contains(err.Error(), "none of the commands worked; this needs root or passwordless sudo") {
			t.Fatalf("force=%v: err = %v", force, err)
		}
		err = s.Reboot(context.Background(), e.params(), force)
		if err == nil || !strings.Contains(err.Error(), "reboot of") {
			t.Fatalf("force=%v: err = %v", force, err)
		}
	}
	// The host is still up.
	if got := sh(t, e, "echo up"); got != "up\n" {
		t.Fatal(got)
	}
}
