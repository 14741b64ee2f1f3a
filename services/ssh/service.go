// Package ssh implements mlos_bench's SSH services: SshHostService runs
// scripts on hosts and shuts them down or reboots them (services.RemoteExec
// and services.OSOps), and SshFileShareService copies files to and from
// hosts over SFTP (services.FileShare).
//
// Both read the `ssh_*` keys of the mlos_bench service schema and take the
// host from the ssh_hostname parameter. Host keys are checked against a
// known_hosts file unless ssh_insecure_ignore_host_key is true. Scripts run
// detached from the SSH connection, so that a long run survives a dropped
// connection; see docs/ssh.md.
package ssh

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/benchtune/bench/services"
)

// Class names, as in mlos_bench.
const (
	HostServiceClass          = "mlos_bench.services.remote.ssh.SshHostService"
	HostServiceClassFull      = "mlos_bench.services.remote.ssh.ssh_host_service.SshHostService"
	FileShareServiceClass     = "mlos_bench.services.remote.ssh.SshFileShareService"
	FileShareServiceClassFull = "mlos_bench.services.remote.ssh.ssh_fileshare.SshFileShareService"
)

func init() {
	services.Register(newHostServiceFromSpec, HostServiceClass, HostServiceClassFull)
	services.Register(newFileShareServiceFromSpec, FileShareServiceClass, FileShareServiceClassFull)
}

// HostService runs scripts on hosts over SSH and shuts them down or
// reboots them. It caches one connection per (user, host, port, key) and
// is safe for concurrent use. Close it to close the connections.
type HostService struct {
	cfg    Config
	pool   *pool
	tuning tuning
	os     osTuning
}

var (
	_ services.RemoteExec = (*HostService)(nil)
	_ services.OSOps      = (*HostService)(nil)
	_ services.FileShare  = (*FileShareService)(nil)
)

// NewHostService returns an SshHostService with the given settings (zero
// fields take the defaults of DefaultConfig).
func NewHostService(cfg Config) (*HostService, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	logConfig(cfg, "SshHostService")
	return &HostService{cfg: cfg, pool: newPool(cfg), tuning: defaultTuning(), os: defaultOSTuning()}, nil
}

func newHostServiceFromSpec(_ context.Context, spec services.Spec) (any, error) {
	cfg, err := ParseConfig(spec.Config, spec.Ref, true)
	if err != nil {
		return nil, err
	}
	if cfg, err = globalHostKeyPolicy(cfg, spec); err != nil {
		return nil, err
	}
	return NewHostService(cfg)
}

// globalHostKeyPolicy applies a global ssh_strict_host_key_checking to a
// service whose config does not set it (bench only: unlike other globals,
// it reaches configs without the key, such as mlos_bench's shipped SSH
// service configs). A service that skips host key checks is left alone.
func globalHostKeyPolicy(cfg Config, spec services.Spec) (Config, error) {
	if _, own := spec.Config[strictHostKeyKey]; own || cfg.InsecureIgnoreHostKey {
		return cfg, nil
	}
	v, ok := spec.Globals[strictHostKeyKey]
	if !ok || v == nil {
		return cfg, nil
	}
	str, isStr := v.(string)
	cfg.StrictHostKeyChecking = str
	if err := cfg.checkHostKeyPolicy(); !isStr || err != nil {
		return Config{}, fmt.Errorf("global %s: want %q or %q, got %v", strictHostKeyKey, HostKeyStrict, HostKeyAcceptNew, v)
	}
	return cfg, nil
}

// strictHostKeyKey is the config key (and global) of the host key policy.
const strictHostKeyKey = "ssh_strict_host_key_checking"

// Close closes the cached connections. Runs in progress on the hosts go on.
func (s *HostService) Close() error { return s.pool.Close() }

// FileShareService copies files and folders between this machine and hosts
// over SFTP. It caches one connection per (user, host, port, key) and is
// safe for concurrent use. Close it to close the connections.
type FileShareService struct {
	cfg  Config
	pool *pool
}

// NewFileShareService returns an SshFileShareService with the given
// settings (zero fields take the defaults; Shell is not used).
func NewFileShareService(cfg Config) (*FileShareService, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	logConfig(cfg, "SshFileShareService")
	return &FileShareService{cfg: cfg, pool: newPool(cfg)}, nil
}

func newFileShareServiceFromSpec(_ context.Context, spec services.Spec) (any, error) {
	cfg, err := ParseConfig(spec.Config, spec.Ref, false)
	if err != nil {
		return nil, err
	}
	if cfg, err = globalHostKeyPolicy(cfg, spec); err != nil {
		return nil, err
	}
	return NewFileShareService(cfg)
}

// Close closes the cached connections.
func (s *FileShareService) Close() error { return s.pool.Close() }

// InsecureNotice is the notice of an SSH service that does not check
// host keys.
func InsecureNotice(who string) string {
	return who + ": SSH host key verification is OFF (ssh_insecure_ignore_host_key is true); connections could be intercepted"
}

// SecurityNotices reports that host keys are not checked, when so
// configured (services.SecurityNoticer).
func (s *HostService) SecurityNotices() []string { return securityNotices(s.cfg, "SshHostService") }

// SecurityNotices reports that host keys are not checked, when so
// configured (services.SecurityNoticer).
func (s *FileShareService) SecurityNotices() []string {
	return securityNotices(s.cfg, "SshFileShareService")
}

func securityNotices(cfg Config, who string) []string {
	if !cfg.InsecureIgnoreHostKey {
		return nil
	}
	return []string{InsecureNotice(who)}
}

func logConfig(cfg Config, who string) {
	switch {
	case cfg.InsecureIgnoreHostKey:
		slog.Warn(InsecureNotice(who))
	case cfg.knownHostsNull:
		slog.Debug(who+`: "ssh_known_hosts_path": null turns host key checks off in mlos_bench, but bench still checks host keys; `+
			`set "ssh_strict_host_key_checking": "accept-new" (in the config, or as a global) to record the keys of hosts seen for the first time, `+
			`or "ssh_insecure_ignore_host_key": true to skip the checks`, "known_hosts", cfg.KnownHostsPath)
	}
}
