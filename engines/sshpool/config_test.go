package sshpool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/engines"
)

func TestParseConfig(t *testing.T) {
	def := func(hosts ...HostConfig) Config {
		return Config{Hosts: hosts, KnownHostsFile: DefaultKnownHostsFile, StrictHostKeyChecking: true,
			MaxHostFailures: DefaultMaxHostFailures, HostCooldown: DefaultHostCooldown, ConnectTimeout: DefaultConnectTimeout}
	}
	tests := []struct {
		name    string
		in      map[string]any
		want    Config
		wantErr string
	}{
		{
			// decode.Into's rule (the converters'): "yes" and "4" read as
			// the bool and the integer.
			name: "words and numbers as text",
			in:   map[string]any{"hosts": []any{map[string]any{"host": "node1", "slots": "4"}}, "upload_bench": "yes"},
			want: func() Config {
				c := def(HostConfig{Host: "node1", Port: 22, Slots: 4})
				c.UploadBench = true
				return c
			}(),
		},
		{
			name: "user@host:port",
			in:   map[string]any{"hosts": []any{map[string]any{"host": "alice@node1:2222", "key_file": "~/.ssh/k", "slots": 4.0}}},
			want: def(HostConfig{User: "alice", Host: "node1", Port: 2222, KeyFile: "~/.ssh/k", Slots: 4}),
		},
		{
			name: "bare host, IPv6 with port, separate keys",
			in: map[string]any{"hosts": []any{
				map[string]any{"host": "node1"},
				map[string]any{"host": "bob@[::1]:23", "bench": "/opt/bench", "workdir": "/scratch/b"},
				map[string]any{"ssh_hostname": "node3", "ssh_username": "carol", "ssh_port": 24.0, "ssh_priv_key_path": "/k"},
			}},
			want: def(
				HostConfig{Host: "node1", Port: 22, Slots: 1},
				HostConfig{User: "bob", Host: "::1", Port: 23, Slots: 1, Bench: "/opt/bench", WorkDir: "/scratch/b"},
				HostConfig{User: "carol", Host: "node3", Port: 24, Slots: 1, KeyFile: "/k"},
			),
		},
		{
			name: "pool keys",
			in: map[string]any{"hosts": []any{map[string]any{"host": "n"}}, "known_hosts_file": "/kh",
				"strict_host_key_checking": false, "max_host_failures": 5.0, "host_cooldown": "90s", "upload_bench": true, "connect_timeout": 3.0},
			want: func() Config {
				c := def(HostConfig{Host: "n", Port: 22, Slots: 1})
				c.KnownHostsFile, c.StrictHostKeyChecking, c.MaxHostFailures, c.HostCooldown, c.UploadBench, c.ConnectTimeout =
					"/kh", false, 5, 90*time.Second, true, 3*time.Second
				return c
			}(),
		},
		{name: "no hosts", in: map[string]any{}, wantErr: `"hosts" is required`},
		{name: "unknown pool key", in: map[string]any{"hosts": []any{map[string]any{"host": "n"}}, "hostz": 1.0}, wantErr: `unknown config key "hostz"`},
		{name: "unknown host key", in: map[string]any{"hosts": []any{map[string]any{"host": "n", "slot": 2.0}}}, wantErr: `hosts[0]: unknown config key "slot"`},
		{name: "zero slots", in: map[string]any{"hosts": []any{map[string]any{"host": "n", "slots": 0.0}}}, wantErr: "at least 1"},
		{name: "bad port", in: map[string]any{"hosts": []any{map[string]any{"host": "u@n:99999"}}}, wantErr: "not a number in 1-65535"},
		{name: "both forms", in: map[string]any{"hosts": []any{map[string]any{"host": "n", "ssh_port": 22.0}}}, wantErr: "not both"},
		{name: "no host", in: map[string]any{"hosts": []any{map[string]any{"slots": 2.0}}}, wantErr: `"host"`},
		{name: "empty user", in: map[string]any{"hosts": []any{map[string]any{"host": "@n"}}}, wantErr: "user before '@' is empty"},
		{name: "twice", in: map[string]any{"hosts": []any{map[string]any{"host": "u@n"}, map[string]any{"host": "u@n:22"}}}, wantErr: "listed twice"},
		{name: "wrong type", in: map[string]any{"hosts": []any{map[string]any{"host": "n"}}, "upload_bench": "maybe"}, wantErr: `"upload_bench"`},
		{name: "max failures", in: map[string]any{"hosts": []any{map[string]any{"host": "n"}}, "max_host_failures": 0.0}, wantErr: "at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("config (-want +got):\n%s", d)
			}
		})
	}
}

func TestSplitHostPort(t *testing.T) {
	for in, want := range map[string][2]any{
		"h": {"h", 0}, "h:1": {"h", 1}, "[::1]": {"::1", 0}, "[::1]:5": {"::1", 5}, "fe80::1": {"fe80::1", 0},
	} {
		h, p, err := splitHostPort(in)
		if err != nil || h != want[0] || p != want[1] {
			t.Errorf("splitHostPort(%q) = %q, %d, %v; want %v", in, h, p, err, want)
		}
	}
}

// TestExampleConfig: the example engine config builds a pool (no
// connection is made until a job is submitted).
func TestExampleConfig(t *testing.T) {
	doc, err := source.ReadFile("../../configs/examples/engines/ssh-pool.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	m, err := configs.Object(doc)
	if err != nil {
		t.Fatal(err)
	}
	spec := engines.Spec{Class: m["class"].(string)}
	spec.Config, _ = m["config"].(map[string]any)
	eng, err := engines.New(context.Background(), spec, engines.Params{ExperimentID: "ex", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if eng.Slots() != 14 || eng.Name() != "ssh" {
		t.Errorf("slots %d, name %s; want 14, ssh", eng.Slots(), eng.Name())
	}
	var hosts []string
	for _, h := range eng.(*Engine).Hosts() {
		hosts = append(hosts, h.Addr)
	}
	want := []string{"bench@node1.example.com:22", "bench@node2.example.com:2222", "bench@10.0.0.7:22"}
	if d := cmp.Diff(want, hosts); d != "" {
		t.Errorf("hosts (-want +got):\n%s", d)
	}
	spec.Config["hostz"] = 1.0
	if _, err := engines.New(context.Background(), spec, engines.Params{}); err == nil || !strings.Contains(err.Error(), `unknown config key "hostz"`) {
		t.Errorf("unknown key: %v", err)
	}
}
