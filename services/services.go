// Package services defines the services environments use to act on the
// world (run commands, move files, manage hosts) and the stack that layers
// them, as mlos_bench's services do: later services override earlier ones,
// and each environment adds the services it includes.
//
// Implementations live in sub-packages (local, ssh, aws, azure) and register
// their classes with Register from an init function.
package services

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/decode"
	internalregistry "github.com/benchtune/bench/internal/registry"
	"github.com/benchtune/bench/trial"
)

// Params are an environment's parameters (const_args, tunable values,
// globals) as passed to services: values are string, int64, float64, bool,
// nil or []any of those.
type Params = map[string]any

// ErrTimeout is wrapped by errors returned when a command or an operation
// ran past its time limit. It is trial.ErrTimeout: trial.StopCause maps
// it to the TIMED_OUT status.
var ErrTimeout = trial.ErrTimeout

// ExecRequest describes commands to run locally.
type ExecRequest struct {
	// Lines are run one after another, each by its own shell, as in
	// mlos_bench (so `cd` or `export` do not carry over between lines).
	Lines []string
	// Env is added to the process environment.
	Env map[string]string
	// Dir is the working directory.
	Dir string
	// LineTimeout bounds each line (0: no limit); the context bounds all.
	LineTimeout time.Duration
	// Live, when set, receives output lines as they are produced.
	Live io.Writer
	// Verbatim hands each line to the shell as it is written (bench only:
	// bench_shell_lines "verbatim"), apart from the script names resolved
	// on the search path. Without it, lines are split into words and
	// joined again as mlos_bench does, which removes their quotes.
	Verbatim bool
}

// LineResult is the outcome of one command line.
type LineResult struct {
	Line     string
	ExitCode int
	Stdout   string // bounded: see Truncated
	Stderr   string
	// Truncated is set when output went beyond the kept size; the head and
	// the tail are kept.
	Truncated bool
	TimedOut  bool
	Start     time.Time // when the line started (zero when unknown)
	Duration  time.Duration
	// UserCPU and SysCPU are the CPU time the line's processes used, and
	// MaxRSSBytes the peak resident memory of the largest of them, from the
	// line's wait4 rusage: they include the descendants that were waited
	// for, not processes that detached (double-forked) and outlived it.
	// LocalExec fills them on Linux; they are zero elsewhere and for
	// remote commands.
	UserCPU     time.Duration
	SysCPU      time.Duration
	MaxRSSBytes int64
}

// ExecResult is the outcome of an ExecRequest or a remote script.
type ExecResult struct {
	// ExitCode of the last line run (non-zero when a line failed).
	ExitCode int
	// Stdout and Stderr concatenate what every line printed (bounded).
	Stdout string
	Stderr string
	Lines  []LineResult
}

// LocalExec runs commands on this machine.
type LocalExec interface {
	// LocalExec runs the lines. A non-zero exit code is not an error; an
	// error means the lines could not run, timed out (wraps ErrTimeout) or
	// were cancelled (wraps context.Canceled). The partial result is
	// returned with the error.
	LocalExec(ctx context.Context, req ExecRequest) (ExecResult, error)
}

// TempDirs hands out working directories for environments.
type TempDirs interface {
	// TempDir returns a directory for the named environment and a cleanup
	// function (a no-op when the directory is kept or was configured).
	TempDir(ctx context.Context, name string) (dir string, cleanup func() error, err error)
}

// FileShare moves files between this machine and shared storage. A
// missing source wraps fs.ErrNotExist.
type FileShare interface {
	Upload(ctx context.Context, params Params, localPath, remotePath string, recursive bool) error
	Download(ctx context.Context, params Params, remotePath, localPath string, recursive bool) error
}

// RemoteExecRequest is a script to run on a remote host.
type RemoteExecRequest struct {
	Script []string
	// Params carry the host coordinates (e.g. ssh_hostname) and the rest of
	// the environment's parameters.
	Params Params
	// Env holds variables exported to the script; values are quoted, never
	// spliced into the script text.
	Env map[string]string
	// CommandName identifies the command, e.g. "bench-<env>-run".
	CommandName string
	// Timeout bounds the script (0: only the context bounds it).
	Timeout time.Duration
	// Live, when set, receives output as it is produced.
	Live io.Writer
}

// RemoteExec runs scripts on remote hosts.
type RemoteExec interface {
	RemoteExec(ctx context.Context, req RemoteExecRequest) (ExecResult, error)
}

// HostOps starts and stops existing hosts.
type HostOps interface {
	StartHost(ctx context.Context, params Params) error
	StopHost(ctx context.Context, params Params, force bool) error
	RestartHost(ctx context.Context, params Params, force bool) error
}

// HostProvisioning creates and destroys hosts.
type HostProvisioning interface {
	// ProvisionHost creates (or finds) the host and waits until it runs.
	// The returned params (e.g. ssh_hostname, instance id) are merged into
	// the environment's parameters.
	ProvisionHost(ctx context.Context, params Params) (Params, error)
	DeprovisionHost(ctx context.Context, params Params) error
	DeallocateHost(ctx context.Context, params Params) error
}

// OSOps shuts down and reboots a host's operating system.
type OSOps interface {
	Shutdown(ctx context.Context, params Params, force bool) error
	Reboot(ctx context.Context, params Params, force bool) error
}

// NetworkProvisioning creates and destroys virtual networks.
type NetworkProvisioning interface {
	ProvisionNetwork(ctx context.Context, params Params) (Params, error)
	DeprovisionNetwork(ctx context.Context, params Params, ignoreErrors bool) error
}

// RemoteConfig applies settings to a managed service (SaaS).
type RemoteConfig interface {
	Configure(ctx context.Context, params Params, settings map[string]any) error
	IsConfigPending(ctx context.Context, params Params) (bool, error)
}

// Auth provides credentials for cloud services.
type Auth interface {
	AccessToken(ctx context.Context) (string, error)
}

// ConfigSearchPath is implemented by mlos_bench's ConfigPersistenceService:
// it holds a config search path. Services built on top of it look files
// up (e.g. script names) on that path, and environments built on a stack
// that holds it find their children's configs there, as in mlos_bench.
type ConfigSearchPath interface {
	// ConfigSearchPath returns absolute folders, in order, without the
	// built-in configs (which are always searched last).
	ConfigSearchPath() []string
}

// Spec is what a service constructor gets.
type Spec struct {
	Class string
	// Config is the service's "config" object with globals merged in (a
	// global overrides only keys already present).
	Config map[string]any
	// Globals are all global parameters (for templating, e.g. temp_dir).
	Globals Params
	// Parent gives access to the services below this one (e.g. Auth).
	Parent *Stack
	// SearchPath is the config search path (absolute folders, without the
	// built-in configs): LocalExecService resolves script names on it.
	SearchPath []string
	// Ref points at the service's config, for error messages.
	Ref source.Ref
	// ValidateOnly: the service is built for bench validate and will not
	// be used. The constructor makes every check it makes for a run, and
	// creates nothing outside the process: no folders or files, no
	// connections, no processes (a constructor should not do these
	// anyway; this flag is for one that must, e.g. to create a root
	// folder it was asked to create).
	ValidateOnly bool
}

// Constructor builds a service. The returned value implements one or more
// of the service interfaces, and io.Closer if it holds resources.
//
// The constructor is the class's validate step: bench validate and bench
// run both call it, before the first trial, so everything a config can
// get wrong must be checked here (not at first use), and nothing may be
// started here: connections, processes and files belong to first use
// (see Spec.ValidateOnly).
type Constructor func(ctx context.Context, spec Spec) (any, error)

var registry = internalregistry.New[Constructor]("services")

// Register makes a service class constructible under each of the given
// names (short and full mlos_bench forms, our own names). It panics on a
// duplicate name: that is a programming error.
func Register(ctor Constructor, classes ...string) { registry.Register(ctor, classes...) }

// Classes lists the registered class names, sorted.
func Classes() []string { return registry.Names() }

// New builds a service of spec.Class.
func New(ctx context.Context, spec Spec) (any, error) {
	ctor, ok := registry.Lookup(spec.Class)
	if !ok {
		return nil, spec.Ref.Child("class").Errorf("unknown service class %q; known classes: %s", spec.Class, strings.Join(Classes(), ", "))
	}
	svc, err := ctor(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("service %s: %w", spec.Class, err)
	}
	return svc, nil
}

// ErrNeedsService is wrapped (NeedsService) by the error of a service
// whose own config is fine but that needs another service below it in the
// stack (an Azure service without an authentication service before it).
// bench validate of that service's file alone warns instead of failing: in
// a run, the services listed before it provide it.
var ErrNeedsService = errors.New("needs another service below it")

// NeedsService marks err as ErrNeedsService, keeping its text and what it
// wraps.
func NeedsService(err error) error { return needsService{err} }

type needsService struct{ error }

func (e needsService) Unwrap() error        { return e.error }
func (e needsService) Is(target error) bool { return target == ErrNeedsService }

// Stack is a layered set of services. Lookups search the newest layer
// first, then its parents, so later services override earlier ones.
type Stack struct {
	parent *Stack
	items  []any
}

// NewStack returns a stack holding the given services (later ones win).
func NewStack(svcs ...any) *Stack { return &Stack{items: svcs} }

// Push returns a new layer on top of s holding svcs. s is unchanged.
func (s *Stack) Push(svcs ...any) *Stack {
	return &Stack{parent: s, items: append([]any(nil), svcs...)}
}

// Find returns the newest service in the stack implementing T.
func Find[T any](s *Stack) (T, bool) {
	for cur := s; cur != nil; cur = cur.parent {
		for i := len(cur.items) - 1; i >= 0; i-- {
			if v, ok := cur.items[i].(T); ok {
				return v, true
			}
		}
	}
	var zero T
	return zero, false
}

// Require is Find with an error naming the missing capability.
func Require[T any](s *Stack, what, who string) (T, error) {
	v, ok := Find[T](s)
	if !ok {
		return v, fmt.Errorf("%s needs a %s service, and none is configured (add one to include_services or --service)", who, what)
	}
	return v, nil
}

// SecurityNoticer is implemented by a service that runs in a less safe
// mode its config asked for (an SSH service that does not check host
// keys). bench prints each notice whatever the log level and records it
// with the experiment, so that an insecure run is never silent.
type SecurityNoticer interface {
	SecurityNotices() []string
}

// SecurityNotices returns the notices of the services of this layer only
// (not its parents).
func (s *Stack) SecurityNotices() []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, it := range s.items {
		if n, ok := it.(SecurityNoticer); ok {
			out = append(out, n.SecurityNotices()...)
		}
	}
	return out
}

// Close closes the services of this layer only (not its parents), newest
// first, and returns every error.
func (s *Stack) Close() error {
	if s == nil {
		return nil
	}
	var errs []error
	for i := len(s.items) - 1; i >= 0; i-- {
		if c, ok := s.items[i].(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	s.items = nil
	return errors.Join(errs...)
}

// DecodeConfig decodes spec.Config into out (a pointer to a struct with
// json tags; unknown keys are an error), with an error located at the
// offending key of the service's "config".
func DecodeConfig(spec Spec, out any) error {
	err := decode.Into(spec.Config, out)
	if err == nil {
		return nil
	}
	cref := spec.Ref.Child("config")
	// Find the key at fault by decoding the keys one at a time.
	keys := make([]string, 0, len(spec.Config))
	for k := range spec.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	typ := reflect.TypeOf(out).Elem()
	for _, k := range keys {
		probe := reflect.New(typ).Interface()
		if kerr := decode.Into(map[string]any{k: spec.Config[k]}, probe); kerr != nil {
			return cref.Child(k).Errorf("%v", kerr)
		}
	}
	return cref.Errorf("%v", err)
}
