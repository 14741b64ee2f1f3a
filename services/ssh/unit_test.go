package ssh

import (
	"context"
	"errors"
	"github.com/benchtune/bench/internal/capture"
	"github.com/benchtune/bench/internal/shellenv"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
)

func TestParseConfig(t *testing.T) {
	def := DefaultConfig()
	tests := []struct {
		name      string
		in        map[string]any
		withShell bool
		want      Config
		wantErr   string // substring; the JSON path is part of it
	}{
		{name: "empty", in: map[string]any{}, want: def},
		// decode.Into's rule (the converters'): "22" is the integer 22.
		{name: "port as text", in: map[string]any{"ssh_port": "22"}, want: func() Config { c := def; c.Port = 22; return c }()},
		{
			name: "all keys",
			in: map[string]any{
				"ssh_request_timeout":          90.0,
				"ssh_keepalive_interval":       10.0,
				"ssh_port":                     2222.0,
				"ssh_username":                 "someuser",
				"ssh_priv_key_path":            "~/.ssh/id_rsa",
				"ssh_known_hosts_path":         "/etc/kh",
				"ssh_insecure_ignore_host_key": true,
				"ssh_connect_timeout":          "5s",
				"ssh_shell":                    "/bin/sh",
			},
			withShell: true,
			want: Config{
				RequestTimeout: 90 * time.Second, KeepaliveInterval: 10 * time.Second, Port: 2222,
				Username: "someuser", PrivKeyPath: "~/.ssh/id_rsa", KnownHostsPath: "/etc/kh",
				InsecureIgnoreHostKey: true, ConnectTimeout: 5 * time.Second, Shell: "/bin/sh",
			},
		},
		{
			name: "nulls as in mlos_bench's built-in configs",
			in:   map[string]any{"ssh_known_hosts_path": nil, "ssh_keepalive_interval": nil, "ssh_request_timeout": nil, "ssh_username": nil},
			want: func() Config { c := def; c.KeepaliveInterval = 0; c.knownHostsNull = true; return c }(),
		},
		{name: "unknown key", in: map[string]any{"ssh_bogus": 1.0}, wantErr: `at /config/ssh_bogus: unknown config key "ssh_bogus"`},
		{name: "port out of range", in: map[string]any{"ssh_port": 70000.0}, wantErr: "at /config/ssh_port: port 70000 is out of range"},
		{name: "port wrong type", in: map[string]any{"ssh_port": "twenty-two"}, wantErr: "at /config/ssh_port:"},
		{name: "port not integral", in: map[string]any{"ssh_port": "22.5"}, wantErr: "at /config/ssh_port:"},
		{name: "keepalive too small", in: map[string]any{"ssh_keepalive_interval": 0.5}, wantErr: "at /config/ssh_keepalive_interval: must be at least 1 second"},
		{name: "bad duration", in: map[string]any{"ssh_request_timeout": "soon"}, wantErr: "at /config/ssh_request_timeout: "},
		{name: "shell on a file share", in: map[string]any{"ssh_shell": "/bin/sh"}, wantErr: "at /config/ssh_shell: ssh_shell is a setting of SshHostService only"},
		{name: "empty shell", in: map[string]any{"ssh_shell": " "}, withShell: true, wantErr: "at /config/ssh_shell: must name a shell"},
		{name: "zero connect timeout", in: map[string]any{"ssh_connect_timeout": 0.0}, wantErr: "at /config/ssh_connect_timeout: must be a positive"},
		{
			name: "trust on first use",
			in:   map[string]any{"ssh_known_hosts_path": nil, "ssh_strict_host_key_checking": "accept-new"},
			want: func() Config { c := def; c.knownHostsNull = true; c.StrictHostKeyChecking = HostKeyAcceptNew; return c }(),
		},
		{name: "strict", in: map[string]any{"ssh_strict_host_key_checking": "yes"}, want: func() Config { c := def; c.StrictHostKeyChecking = HostKeyStrict; return c }()},
		{name: "unknown host key policy", in: map[string]any{"ssh_strict_host_key_checking": "no"}, wantErr: `at /config/ssh_strict_host_key_checking: "no" is not a host key policy`},
		{
			name:    "accept-new with checks off",
			in:      map[string]any{"ssh_strict_host_key_checking": "accept-new", "ssh_insecure_ignore_host_key": true},
			wantErr: "at /config/ssh_strict_host_key_checking: \"accept-new\" checks host keys",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.in, source.Ref{}, tc.withShell)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseConfig error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(Config{})); diff != "" {
				t.Errorf("ParseConfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveTarget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Username = "cfguser"
	cfg.Port = 2200
	cfg.PrivKeyPath = "/cfg/key"
	tests := []struct {
		name    string
		params  services.Params
		want    target
		wantErr string
	}{
		{name: "config defaults", params: services.Params{"ssh_hostname": "h1"}, want: target{host: "h1", port: 2200, user: "cfguser", keyPath: "/cfg/key"}},
		{
			name:   "param overrides",
			params: services.Params{"ssh_hostname": "h2", "ssh_port": int64(2022), "ssh_username": "u", "ssh_priv_key_path": "/k"},
			want:   target{host: "h2", port: 2022, user: "u", keyPath: "/k"},
		},
		{name: "float port", params: services.Params{"ssh_hostname": "h", "ssh_port": 2023.0}, want: target{host: "h", port: 2023, user: "cfguser", keyPath: "/cfg/key"}},
		{name: "string port", params: services.Params{"ssh_hostname": "h", "ssh_port": "2024"}, want: target{host: "h", port: 2024, user: "cfguser", keyPath: "/cfg/key"}},
		{name: "zero port ignored", params: services.Params{"ssh_hostname": "h", "ssh_port": int64(0)}, want: target{host: "h", port: 2200, user: "cfguser", keyPath: "/cfg/key"}},
		{name: "ipv6", params: services.Params{"ssh_hostname": "[::1]"}, want: target{host: "::1", port: 2200, user: "cfguser", keyPath: "/cfg/key"}},
		{name: "missing hostname", params: services.Params{"vm_name": "x"}, wantErr: `the "ssh_hostname" parameter is required`},
		{name: "null hostname", params: services.Params{"ssh_hostname": nil}, wantErr: `the "ssh_hostname" parameter is required`},
		{name: "empty hostname", params: services.Params{"ssh_hostname": ""}, wantErr: "must be a non-empty string"},
		{name: "numeric hostname", params: services.Params{"ssh_hostname": int64(5)}, wantErr: "must be a non-empty string"},
		{name: "bad port", params: services.Params{"ssh_hostname": "h", "ssh_port": 22.5}, wantErr: "is not a port number"},
		{name: "port text", params: services.Params{"ssh_hostname": "h", "ssh_port": "ssh"}, wantErr: "must be a port number"},
		{name: "bad user", params: services.Params{"ssh_hostname": "h", "ssh_username": true}, wantErr: "must be a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cfg.resolveTarget(tc.params)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("resolveTarget error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolveTarget: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(target{})); diff != "" {
				t.Errorf("resolveTarget (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := cfg.resolveTarget(services.Params{}); !errors.Is(err, ErrNoHostname) {
		t.Errorf("missing ssh_hostname: error %v does not wrap ErrNoHostname", err)
	}
	if got := (target{host: "::1", port: 22, user: "u"}).addr(); got != "[::1]:22" {
		t.Errorf("addr of an IPv6 host = %q", got)
	}
}

// hostileValues are environment values that must reach a script verbatim.
var hostileValues = []string{
	"",
	"plain",
	"it's",
	`"double" quotes`,
	"$(touch PWNED)",
	"`touch PWNED`",
	"${HOME} $HOME \\$HOME",
	"line1\nline2\n",
	"; touch PWNED; echo '",
	"'\\''",
	"back\\slash\\",
	"tab\there * ? [a] ~ # &&|| > <",
	"ünïcödé ✓",
	"-n",
}

// TestBuildScriptLocal runs the rendered script through the local shells:
// every value arrives verbatim and nothing is executed.
func TestBuildScriptLocal(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{}
	var names []string
	for i, v := range hostileValues {
		n := "V" + string(rune('A'+i))
		env[n] = v
		names = append(names, `"$`+n+`"`)
	}
	script, err := shellenv.Script(env, []string{"printf '%s\\0' " + strings.Join(names, " ")})
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range []string{"sh", "bash", "dash"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		t.Run(sh, func(t *testing.T) {
			cmd := exec.Command(path, "-c", script)
			cmd.Dir = dir
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", sh, err)
			}
			got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
			if diff := cmp.Diff(hostileValues, got); diff != "" {
				t.Errorf("values after the shell (-want +got):\n%s", diff)
			}
			if matches, _ := exec.Command("ls", dir).Output(); len(matches) != 0 {
				t.Errorf("the script created files: %s", matches)
			}
		})
	}
}

func TestBuildScriptRejects(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"dash in name", map[string]string{"MY-VAR": "x"}, `invalid environment variable name "MY-VAR"`},
		{"leading digit", map[string]string{"1X": "x"}, `invalid environment variable name "1X"`},
		{"injection in name", map[string]string{"X=1;touch PWNED;Y": "x"}, "invalid environment variable name"},
		{"empty name", map[string]string{"": "x"}, "invalid environment variable name"},
		{"NUL in value", map[string]string{"OK": "a\x00secret"}, "environment variable OK: the value contains a NUL byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shellenv.Script(tc.env, []string{"true"})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("buildScript error = %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error quotes the value: %v", err)
			}
		})
	}
}

func TestCapture(t *testing.T) {
	tests := []struct {
		name          string
		head, tail    int
		writes        []string
		want          string
		wantTruncated bool
	}{
		{name: "fits", head: 4, tail: 4, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly full", head: 4, tail: 4, writes: []string{"abcdefgh"}, want: "abcdefgh"},
		{name: "one big write", head: 3, tail: 3, writes: []string{"0123456789"}, want: "012\n[bench: 4 bytes of output omitted]\n789", wantTruncated: true},
		{name: "many small writes", head: 2, tail: 3, writes: []string{"a", "b", "c", "d", "e", "f", "g"}, want: "ab\n[bench: 2 bytes of output omitted]\nefg", wantTruncated: true},
		{name: "ring wraps", head: 1, tail: 4, writes: []string{"x", "123", "45", "678"}, want: "x\n[bench: 4 bytes of output omitted]\n5678", wantTruncated: true},
		{name: "no tail", head: 2, tail: 0, writes: []string{"abcd"}, want: "ab\n[bench: 2 bytes of output omitted]\n", wantTruncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := capture.New(tc.head, tc.tail)
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := c.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if got := c.Truncated(); got != tc.wantTruncated {
				t.Errorf("Truncated() = %v, want %v", got, tc.wantTruncated)
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	var b strings.Builder
	var got []string
	lw := &lineWriter{w: writerFunc(func(p []byte) (int, error) {
		got = append(got, string(p))
		b.Write(p)
		return len(p), nil
	})}
	for _, w := range []string{"a", "b\nc", "d\n", "e\nf\ng", "h"} {
		_, _ = lw.Write([]byte(w))
	}
	_ = lw.Flush()
	want := []string{"ab\n", "cd\n", "e\nf\n", "gh"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestNewRunID(t *testing.T) {
	tests := []struct{ name, wantPart string }{
		{"bench-env-run", "-bench-env-run-"},
		{"../../etc/passwd", "-cmd.._.._etc_passwd-"},
		{"", "-cmd-"},
		{".hidden", "-cmd.hidden-"},
		{"a b$c'd", "-a_b_c_d-"},
	}
	for _, tc := range tests {
		id := newRunID(tc.name)
		if !strings.Contains(id, tc.wantPart) || strings.ContainsAny(id, "/ $'") {
			t.Errorf("newRunID(%q) = %q, want it to contain %q and no unsafe characters", tc.name, id, tc.wantPart)
		}
	}
	if newRunID("x") == newRunID("x") {
		t.Error("two run ids are equal")
	}
}

func TestHostKeyErrorMessages(t *testing.T) {
	e := &HostKeyError{Addr: "10.0.0.1:2222", KnownHosts: "/home/u/.ssh/known_hosts", Offered: probeKey}
	msg := e.Error()
	for _, want := range []string{"not in known_hosts file /home/u/.ssh/known_hosts", "ssh-keyscan -p 2222 10.0.0.1 >> /home/u/.ssh/known_hosts", "ssh_insecure_ignore_host_key", "SHA256:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("unknown-host message %q lacks %q", msg, want)
		}
	}
	if !e.Unknown() {
		t.Error("Unknown() = false for a host without entries")
	}
	e = &HostKeyError{Addr: "h:22", KnownHosts: "/kh", Offered: probeKey}
	if msg := e.Error(); !strings.Contains(msg, "ssh-keyscan h >> /kh") {
		t.Errorf("port 22 hint: %q", msg)
	}
}

// TestGlobalHostKeyPolicy: a global ssh_strict_host_key_checking reaches
// SSH services whose config does not set it (mlos_bench's shipped configs),
// never one that sets it or skips host key checks.
func TestGlobalHostKeyPolicy(t *testing.T) {
	accept := services.Params{"ssh_strict_host_key_checking": "accept-new"}
	cases := []struct {
		name    string
		config  map[string]any
		globals services.Params
		want    string
		wantErr string
	}{
		{"no global", map[string]any{"ssh_known_hosts_path": nil}, nil, "", ""},
		{"global reaches a config without the key", map[string]any{"ssh_known_hosts_path": nil}, accept, HostKeyAcceptNew, ""},
		{"the config's own key wins", map[string]any{"ssh_strict_host_key_checking": "yes"}, accept, HostKeyStrict, ""},
		{"insecure config left alone", map[string]any{"ssh_insecure_ignore_host_key": true}, accept, "", ""},
		{"bad global", map[string]any{}, services.Params{"ssh_strict_host_key_checking": "maybe"}, "", `global ssh_strict_host_key_checking: want "yes" or "accept-new", got maybe`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, build := range []func(context.Context, services.Spec) (any, error){newHostServiceFromSpec, newFileShareServiceFromSpec} {
				svc, err := build(context.Background(), services.Spec{Config: tc.config, Globals: tc.globals})
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want %q", err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				var got string
				switch s := svc.(type) {
				case *HostService:
					got = s.cfg.StrictHostKeyChecking
					s.Close()
				case *FileShareService:
					got = s.cfg.StrictHostKeyChecking
					s.Close()
				}
				if got != tc.want {
					t.Errorf("%T: policy %q, want %q", svc, got, tc.want)
				}
			}
		})
	}
}
