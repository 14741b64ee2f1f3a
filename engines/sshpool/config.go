package sshpool

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/internal/decode"
)

// Defaults of the pool's settings.
const (
	DefaultMaxHostFailures = 3
	DefaultHostCooldown    = 5 * time.Minute
	DefaultConnectTimeout  = 10 * time.Second
	DefaultKnownHostsFile  = "~/.ssh/known_hosts"
	// DefaultWorkDir is the far side's work folder, relative to the login
	// directory; the experiment's id is added to it.
	DefaultWorkDir = ".bench/jobs"
)

// rawConfig mirrors the engine's own config keys (the common keys are
// decoded by engines.New).
type rawConfig struct {
	Hosts                 []map[string]any  `json:"hosts"`
	KnownHostsFile        string            `json:"known_hosts_file"`
	StrictHostKeyChecking *bool             `json:"strict_host_key_checking"`
	MaxHostFailures       *int              `json:"max_host_failures"`
	HostCooldown          *decode.Duration  `json:"host_cooldown"`
	UploadBench           bool              `json:"upload_bench"`
	ConnectTimeout        *decode.Duration  `json:"connect_timeout"`
	Env                   map[string]string `json:"env"`
}

// rawHost mirrors one entry of "hosts".
type rawHost struct {
	Host        string `json:"host"`
	Hostname    string `json:"ssh_hostname"`
	Username    string `json:"ssh_username"`
	Port        *int   `json:"ssh_port"`
	KeyFile     string `json:"key_file"`
	PrivKeyPath string `json:"ssh_priv_key_path"`
	Slots       *int   `json:"slots"`
	Bench       string `json:"bench"`
	WorkDir     string `json:"workdir"`
}

// Config is the pool's decoded configuration.
type Config struct {
	Hosts                 []HostConfig
	KnownHostsFile        string
	StrictHostKeyChecking bool
	MaxHostFailures       int
	HostCooldown          time.Duration
	UploadBench           bool
	ConnectTimeout        time.Duration
	// Env is set for bench on every host (plain values, e.g. the
	// AWS_REGION, AWS_ENDPOINT_URL and AWS_SHARED_CREDENTIALS_FILE of a
	// fidelity checkpoint_store): env.go.
	Env map[string]string

	// ExperimentID and DriverDir come from engines.Params: the default
	// workdir is .bench/jobs/<experiment>, and pilots start in the
	// driver's folder when the host has it.
	ExperimentID string
	DriverDir    string
}

// HostConfig is one host of the pool.
type HostConfig struct {
	User    string // "" for the current user
	Host    string
	Port    int
	KeyFile string // "" for the usual ~/.ssh/id_* files and ssh-agent
	Slots   int
	Bench   string // "" for the pool's bench
	WorkDir string // "" for the pool's workdir
}

// Addr is user@host:port (user left out when unset).
func (h HostConfig) Addr() string {
	a := net.JoinHostPort(h.Host, strconv.Itoa(h.Port))
	if h.User != "" {
		return h.User + "@" + a
	}
	return a
}

// ParseConfig decodes the engine's config object (without the common
// keys).
func ParseConfig(m map[string]any) (Config, error) {
	var raw rawConfig
	if err := decode.Into(m, &raw); err != nil {
		return Config{}, err
	}
	cfg := Config{
		KnownHostsFile:        raw.KnownHostsFile,
		StrictHostKeyChecking: true,
		MaxHostFailures:       DefaultMaxHostFailures,
		HostCooldown:          DefaultHostCooldown,
		UploadBench:           raw.UploadBench,
		ConnectTimeout:        DefaultConnectTimeout,
	}
	if cfg.KnownHostsFile == "" {
		cfg.KnownHostsFile = DefaultKnownHostsFile
	}
	if raw.StrictHostKeyChecking != nil {
		cfg.StrictHostKeyChecking = *raw.StrictHostKeyChecking
	}
	if raw.MaxHostFailures != nil {
		if *raw.MaxHostFailures < 1 {
			return Config{}, fmt.Errorf("config key \"max_host_failures\": must be at least 1, got %d", *raw.MaxHostFailures)
		}
		cfg.MaxHostFailures = *raw.MaxHostFailures
	}
	if raw.HostCooldown != nil {
		cfg.HostCooldown = raw.HostCooldown.Std()
	}
	if raw.ConnectTimeout != nil {
		if raw.ConnectTimeout.Std() <= 0 {
			return Config{}, fmt.Errorf("config key \"connect_timeout\": must be a positive duration")
		}
		cfg.ConnectTimeout = raw.ConnectTimeout.Std()
	}
	if err := checkEnv(raw.Env); err != nil { // env.go
		return Config{}, err
	}
	cfg.Env = raw.Env
	if len(raw.Hosts) == 0 {
		return Config{}, fmt.Errorf(`config key "hosts" is required: a list of {"host": "user@host:port", "key_file": ..., "slots": ...}`)
	}
	seen := map[string]int{}
	for i, hm := range raw.Hosts {
		h, err := parseHost(hm)
		if err != nil {
			return Config{}, fmt.Errorf("hosts[%d]: %w", i, err)
		}
		if j, dup := seen[h.Addr()]; dup {
			return Config{}, fmt.Errorf("hosts[%d]: %s is listed twice (also hosts[%d]); give it more slots instead", i, h.Addr(), j)
		}
		seen[h.Addr()] = i
		cfg.Hosts = append(cfg.Hosts, h)
	}
	return cfg, nil
}

func parseHost(m map[string]any) (HostConfig, error) {
	var raw rawHost
	if err := decode.Into(m, &raw); err != nil {
		return HostConfig{}, err
	}
	h := HostConfig{Port: 22, Slots: 1, KeyFile: raw.KeyFile, Bench: raw.Bench, WorkDir: raw.WorkDir}
	if raw.KeyFile != "" && raw.PrivKeyPath != "" {
		return h, fmt.Errorf(`set "key_file" or "ssh_priv_key_path", not both`)
	}
	if raw.PrivKeyPath != "" {
		h.KeyFile = raw.PrivKeyPath
	}
	switch {
	case raw.Host != "" && (raw.Hostname != "" || raw.Username != "" || raw.Port != nil):
		return h, fmt.Errorf(`set "host" ("user@host:port") or "ssh_hostname", "ssh_username" and "ssh_port", not both`)
	case raw.Host != "":
		u, hp, ok := strings.Cut(raw.Host, "@")
		if !ok {
			u, hp = "", raw.Host
		} else if u == "" {
			return h, fmt.Errorf("host %q: the user before '@' is empty", raw.Host)
		}
		h.User = u
		host, port, err := splitHostPort(hp)
		if err != nil {
			return h, fmt.Errorf("host %q: %w", raw.Host, err)
		}
		h.Host = host
		if port != 0 {
			h.Port = port
		}
	case raw.Hostname != "":
		h.Host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(raw.Hostname), "["), "]")
		h.User = raw.Username
		if raw.Port != nil {
			h.Port = *raw.Port
		}
	default:
		return h, fmt.Errorf(`"host" ("user@host:port") or "ssh_hostname" is required`)
	}
	if h.Host == "" || strings.ContainsAny(h.Host, " \t\n/@") {
		return h, fmt.Errorf("%q is not a host name or address", h.Host)
	}
	if h.Port < 1 || h.Port > 65535 {
		return h, fmt.Errorf("port %d is out of range 1-65535", h.Port)
	}
	if raw.Slots != nil {
		if *raw.Slots < 1 {
			return h, fmt.Errorf("config key \"slots\": must be at least 1, got %d", *raw.Slots)
		}
		h.Slots = *raw.Slots
	}
	return h, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port"; port
// 0 means none given.
func splitHostPort(s string) (string, int, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("missing ']'")
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		p, ok := strings.CutPrefix(rest, ":")
		if !ok {
			return "", 0, fmt.Errorf("unexpected %q after ']'", rest)
		}
		return parsePort(host, p)
	}
	if strings.Count(s, ":") > 1 { // a bare IPv6 address
		return s, 0, nil
	}
	host, p, ok := strings.Cut(s, ":")
	if !ok {
		return s, 0, nil
	}
	return parsePort(host, p)
}

func parsePort(host, p string) (string, int, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number in 1-65535", p)
	}
	return host, n, nil
}
