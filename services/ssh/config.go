package ssh

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// Defaults of the SSH services' settings.
const (
	DefaultPort              = 22
	DefaultShell             = "/bin/bash"
	DefaultConnectTimeout    = 30 * time.Second
	DefaultKeepaliveInterval = 30 * time.Second
	DefaultKnownHostsPath    = "~/.ssh/known_hosts"
)

// Values of ssh_strict_host_key_checking (OpenSSH's StrictHostKeyChecking
// names).
const (
	// HostKeyStrict refuses any host whose key is not in known_hosts (the
	// default).
	HostKeyStrict = "yes"
	// HostKeyAcceptNew records the key of a host that known_hosts does not
	// list yet (trust on first use), with a warning that shows its
	// fingerprint; a key that differs from a recorded one is still
	// refused.
	HostKeyAcceptNew = "accept-new"
)

// Config holds the settings of SshHostService and SshFileShareService,
// decoded from the `ssh_*` keys of the service config.
type Config struct {
	// RequestTimeout bounds each remote command (ssh_request_timeout); 0:
	// no bound beyond the request's Timeout and its context.
	RequestTimeout time.Duration
	// KeepaliveInterval is how often an idle connection is probed
	// (ssh_keepalive_interval); 0 turns keepalives off.
	KeepaliveInterval time.Duration
	// Port is the default port (ssh_port).
	Port int
	// Username is the default login (ssh_username); "" means the current
	// user.
	Username string
	// PrivKeyPath is the private key file (ssh_priv_key_path, ~ expanded);
	// "" means the usual ~/.ssh/id_* files, when present.
	PrivKeyPath string
	// KnownHostsPath is the known_hosts file that host keys are checked
	// against (ssh_known_hosts_path, ~ expanded).
	KnownHostsPath string
	// InsecureIgnoreHostKey accepts any host key
	// (ssh_insecure_ignore_host_key). Every such connection logs a warning.
	InsecureIgnoreHostKey bool
	// StrictHostKeyChecking is HostKeyStrict or HostKeyAcceptNew
	// (ssh_strict_host_key_checking; "" means HostKeyStrict).
	StrictHostKeyChecking string
	// ConnectTimeout bounds each connection attempt, TCP connect and SSH
	// handshake (ssh_connect_timeout).
	ConnectTimeout time.Duration
	// Shell runs the scripts (ssh_shell, SshHostService only).
	Shell string

	// knownHostsNull records an explicit "ssh_known_hosts_path": null,
	// which mlos_bench reads as "do not check"; bench only logs about it.
	knownHostsNull bool
}

// DefaultConfig returns the settings used for keys a config leaves out.
func DefaultConfig() Config {
	return Config{
		KeepaliveInterval: DefaultKeepaliveInterval,
		Port:              DefaultPort,
		KnownHostsPath:    DefaultKnownHostsPath,
		ConnectTimeout:    DefaultConnectTimeout,
		Shell:             DefaultShell,
	}
}

// rawConfig mirrors the JSON config keys.
type rawConfig struct {
	RequestTimeout        *decode.Duration `json:"ssh_request_timeout"`
	KeepaliveInterval     *decode.Duration `json:"ssh_keepalive_interval"`
	Port                  *int             `json:"ssh_port"`
	Username              *string          `json:"ssh_username"`
	PrivKeyPath           *string          `json:"ssh_priv_key_path"`
	KnownHostsPath        *string          `json:"ssh_known_hosts_path"`
	InsecureIgnoreHostKey *bool            `json:"ssh_insecure_ignore_host_key"`
	StrictHostKeyChecking *string          `json:"ssh_strict_host_key_checking"`
	ConnectTimeout        *decode.Duration `json:"ssh_connect_timeout"`
	Shell                 *string          `json:"ssh_shell"`
}

// ParseConfig decodes a service's "config" object. ref points at the
// service (its "config" member holds m) and locates errors. withShell
// allows ssh_shell (SshHostService only).
func ParseConfig(m map[string]any, ref source.Ref, withShell bool) (Config, error) {
	cref := ref.Child("config")
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// Decode key by key so that an error points at the offending key.
	var raw rawConfig
	for _, k := range keys {
		if k == "ssh_shell" && !withShell {
			return Config{}, cref.Child(k).Errorf("ssh_shell is a setting of SshHostService only; a file share runs no scripts")
		}
		if err := decode.Into(map[string]any{k: m[k]}, &raw); err != nil {
			return Config{}, cref.Child(k).Errorf("%v", err)
		}
	}

	cfg := DefaultConfig()
	if raw.RequestTimeout != nil {
		cfg.RequestTimeout = raw.RequestTimeout.Std()
	}
	if v, present := m["ssh_keepalive_interval"]; present {
		// An explicit null turns keepalives off, as in mlos_bench.
		cfg.KeepaliveInterval = 0
		if v != nil {
			cfg.KeepaliveInterval = raw.KeepaliveInterval.Std()
			if cfg.KeepaliveInterval < time.Second {
				return Config{}, cref.Child("ssh_keepalive_interval").Errorf("must be at least 1 second, or null to turn keepalives off")
			}
		}
	}
	if raw.Port != nil {
		if *raw.Port < 1 || *raw.Port > 65535 {
			return Config{}, cref.Child("ssh_port").Errorf("port %d is out of range 1-65535", *raw.Port)
		}
		cfg.Port = *raw.Port
	}
	if raw.Username != nil {
		cfg.Username = *raw.Username
	}
	if raw.PrivKeyPath != nil {
		cfg.PrivKeyPath = *raw.PrivKeyPath
	}
	// mlos_bench documents null as "no host key checking"; bench keeps
	// checking (against the default file) unless
	// ssh_insecure_ignore_host_key is true.
	if raw.KnownHostsPath != nil && *raw.KnownHostsPath != "" {
		cfg.KnownHostsPath = *raw.KnownHostsPath
	}
	if v, present := m["ssh_known_hosts_path"]; present && v == nil {
		cfg.knownHostsNull = true
	}
	if raw.InsecureIgnoreHostKey != nil {
		cfg.InsecureIgnoreHostKey = *raw.InsecureIgnoreHostKey
	}
	if raw.StrictHostKeyChecking != nil {
		cfg.StrictHostKeyChecking = *raw.StrictHostKeyChecking
		if err := cfg.checkHostKeyPolicy(); err != nil {
			return Config{}, cref.Child("ssh_strict_host_key_checking").Errorf("%v", err)
		}
	}
	if raw.ConnectTimeout != nil {
		cfg.ConnectTimeout = raw.ConnectTimeout.Std()
		if cfg.ConnectTimeout <= 0 {
			return Config{}, cref.Child("ssh_connect_timeout").Errorf("must be a positive number of seconds")
		}
	}
	if raw.Shell != nil {
		if strings.TrimSpace(*raw.Shell) == "" {
			return Config{}, cref.Child("ssh_shell").Errorf("must name a shell, e.g. /bin/bash")
		}
		cfg.Shell = *raw.Shell
	}
	return cfg, nil
}

// normalize fills in defaults for zero values and checks the settings.
func (c Config) normalize() (Config, error) {
	d := DefaultConfig()
	if c.Port == 0 {
		c.Port = d.Port
	}
	if c.Port < 1 || c.Port > 65535 {
		return c, fmt.Errorf("ssh_port %d is out of range 1-65535", c.Port)
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = d.ConnectTimeout
	}
	if c.KnownHostsPath == "" {
		c.KnownHostsPath = d.KnownHostsPath
	}
	if c.Shell == "" {
		c.Shell = d.Shell
	}
	if err := c.checkHostKeyPolicy(); err != nil {
		return c, fmt.Errorf("ssh_strict_host_key_checking: %w", err)
	}
	if c.RequestTimeout < 0 || c.KeepaliveInterval < 0 {
		return c, errors.New("ssh_request_timeout and ssh_keepalive_interval must not be negative")
	}
	return c, nil
}

// checkHostKeyPolicy checks StrictHostKeyChecking.
func (c Config) checkHostKeyPolicy() error {
	switch c.StrictHostKeyChecking {
	case "", HostKeyStrict:
		return nil
	case HostKeyAcceptNew:
		if c.InsecureIgnoreHostKey {
			return errors.New(`"accept-new" checks host keys, "ssh_insecure_ignore_host_key": true skips the check: set only one of them`)
		}
		return nil
	}
	return fmt.Errorf("%q is not a host key policy: want %q (the default: only hosts in known_hosts) or %q (record the key of a host seen for the first time)",
		c.StrictHostKeyChecking, HostKeyStrict, HostKeyAcceptNew)
}

// acceptNew reports whether unknown hosts' keys are recorded.
func (c Config) acceptNew() bool {
	return c.StrictHostKeyChecking == HostKeyAcceptNew && !c.InsecureIgnoreHostKey
}

// target is where a connection goes and who it logs in as.
type target struct {
	host    string
	port    int
	user    string
	keyPath string // "" for the default key files
}

func (t target) addr() string { return joinHostPort(t.host, t.port) }

func (t target) String() string { return t.user + "@" + t.addr() }

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

// ErrNoHostname is wrapped by the error returned when the ssh_hostname
// parameter is missing.
var ErrNoHostname = errors.New(`the "ssh_hostname" parameter is required`)

// resolveTarget picks the connection coordinates: ssh_hostname (required)
// from the params; ssh_port, ssh_username and ssh_priv_key_path from the
// params when set there, else from the service config (as mlos_bench does).
func (c Config) resolveTarget(params services.Params) (target, error) {
	t := target{port: c.Port, user: c.Username, keyPath: c.PrivKeyPath}
	host, ok := params["ssh_hostname"]
	if !ok || host == nil {
		return t, fmt.Errorf("%w to know which host to connect to over SSH: set it in the environment's const_args, or let a host service (e.g. a VM service) provide it", ErrNoHostname)
	}
	hs, ok := host.(string)
	if !ok || strings.TrimSpace(hs) == "" {
		return t, fmt.Errorf(`the "ssh_hostname" parameter must be a non-empty string, got %v (%T)`, host, host)
	}
	t.host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(hs), "["), "]")

	if v, ok := params["ssh_port"]; ok && v != nil && v != "" {
		p, err := paramPort(v)
		if err != nil {
			return t, err
		}
		if p != 0 { // mlos_bench ignores a falsy port
			t.port = p
		}
	}
	if v, ok := params["ssh_username"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return t, fmt.Errorf(`the "ssh_username" parameter must be a string, got %T`, v)
		}
		t.user = s
	}
	if v, ok := params["ssh_priv_key_path"]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return t, fmt.Errorf(`the "ssh_priv_key_path" parameter must be a string, got %T`, v)
		}
		t.keyPath = s
	}
	if t.user == "" {
		u, err := currentUser()
		if err != nil {
			return t, err
		}
		t.user = u
	}
	return t, nil
}

func paramPort(v any) (int, error) {
	p, ok := decode.Float(v)
	if !ok {
		if s, isStr := v.(string); isStr {
			return 0, fmt.Errorf(`the "ssh_port" parameter must be a port number, got %q`, s)
		}
		return 0, fmt.Errorf(`the "ssh_port" parameter must be a port number, got %T`, v)
	}
	if p != math.Trunc(p) || p < 0 || p > 65535 {
		return 0, fmt.Errorf(`the "ssh_port" parameter %v is not a port number (1-65535)`, v)
	}
	return int(p), nil
}

func currentUser() (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if u := os.Getenv("USER"); u != "" {
		return u, nil
	}
	return "", errors.New("cannot tell the current user's name for the SSH login: set ssh_username")
}

// expandHome expands a leading ~ or ~/ to the current user's home.
func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expanding %s: %w", p, err)
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}
