// Package mock implements mlos_bench's test mock services, which
// mlos_bench's own test configs (and CLI test configs) use: they act on
// nothing and succeed, as mlos_bench's do.
//
//   - MockLocalExecService runs no command: every line "exits" 0 with no
//     output. It hands out working directories as TempDirContextService
//     does (its temp_dir config).
//   - MockRemoteExecService runs no script: it succeeds with no output.
//   - MockVMService provisions, deprovisions, deallocates, starts, stops
//     and restarts hosts, and shuts down and reboots their OS: every
//     operation succeeds at once and returns no parameters.
//   - MockNetworkService provisions and deprovisions networks the same way.
//   - MockFileShareService copies nothing; it records the uploads and
//     downloads it was asked for (Uploads, Downloads).
//   - MockAuthService returns the access token "TOKEN".
//   - MockServiceBase and MockServiceChild (which only test mlos_bench's
//     service method registration) build, and offer nothing environments
//     use.
//
// Their configs are accepted as mlos_bench's schemas describe them (e.g.
// MockVMService's vmName) and otherwise unused.
package mock

import (
	"context"
	"sync"
	"time"

	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/local"
)

// The class names, as mlos_bench's service schemas list them (and, for
// MockLocalExecService, the names its packages export it under).
var (
	LocalExecClasses = []string{
		"mlos_bench.tests.services.local.mock.mock_local_exec_service.MockLocalExecService",
		"mlos_bench.tests.services.local.mock.MockLocalExecService",
		"mlos_bench.tests.services.local.MockLocalExecService",
	}
	RemoteExecClasses = []string{"mlos_bench.tests.services.remote.mock.mock_remote_exec_service.MockRemoteExecService"}
	VMClasses         = []string{"mlos_bench.tests.services.remote.mock.mock_vm_service.MockVMService"}
	NetworkClasses    = []string{"mlos_bench.tests.services.remote.mock.mock_network_service.MockNetworkService"}
	FileShareClasses  = []string{"mlos_bench.tests.services.remote.mock.mock_fileshare_service.MockFileShareService"}
	AuthClasses       = []string{"mlos_bench.tests.services.remote.mock.mock_auth_service.MockAuthService"}
	// mlos_bench's MockServiceBase and MockServiceChild only test its
	// service method registration; environments use none of their methods.
	ServiceBaseClasses  = []string{"mlos_bench.tests.services.mock_service.MockServiceBase"}
	ServiceChildClasses = []string{"mlos_bench.tests.services.mock_service.MockServiceChild"}
)

// AccessToken is the token MockAuthService returns (mlos_bench's value).
const AccessToken = "TOKEN"

var (
	_ services.LocalExec           = (*LocalExecService)(nil)
	_ services.TempDirs            = (*LocalExecService)(nil)
	_ services.RemoteExec          = (*RemoteExecService)(nil)
	_ services.HostProvisioning    = (*VMService)(nil)
	_ services.HostOps             = (*VMService)(nil)
	_ services.OSOps               = (*VMService)(nil)
	_ services.NetworkProvisioning = (*NetworkService)(nil)
	_ services.FileShare           = (*FileShareService)(nil)
	_ services.Auth                = (*AuthService)(nil)
)

func init() {
	services.Register(newLocalExec, LocalExecClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &RemoteExecService{}, nil }, RemoteExecClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &VMService{}, nil }, VMClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &NetworkService{}, nil }, NetworkClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &FileShareService{}, nil }, FileShareClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &AuthService{}, nil }, AuthClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &Service{}, nil }, ServiceBaseClasses...)
	services.Register(func(context.Context, services.Spec) (any, error) { return &Service{child: true}, nil }, ServiceChildClasses...)
}

// Service is mlos_bench's MockServiceBase (or, with child set,
// MockServiceChild): two methods that say which class answered.
type Service struct{ child bool }

// SomeMethod says which class answered.
func (s *Service) SomeMethod() string {
	if s.child {
		return s.String() + ": child.some_method"
	}
	return s.String() + ": base.some_method"
}

// SomeOtherMethod says which class answered (the child keeps the base's).
func (s *Service) SomeOtherMethod() string { return s.String() + ": base.some_other_method" }

// String describes the service for logs.
func (s *Service) String() string {
	if s.child {
		return "MockServiceChild"
	}
	return "MockServiceBase"
}

// LocalExecService is mlos_bench's MockLocalExecService.
type LocalExecService struct {
	*local.TempDirContextService
}

func newLocalExec(_ context.Context, spec services.Spec) (any, error) {
	ref := spec.Ref.Child("config")
	cfg, err := local.ParseTempDirConfig(spec.Config, spec.Globals, ref)
	if err != nil {
		return nil, err
	}
	td, err := local.NewTempDirContext(cfg, local.Options{SearchPath: spec.SearchPath})
	if err != nil {
		e := ref.Child("temp_dir").Errorf("")
		e.Err = err
		return nil, e
	}
	return &LocalExecService{TempDirContextService: td}, nil
}

// LocalExec runs nothing: each line succeeds with no output.
func (s *LocalExecService) LocalExec(ctx context.Context, req services.ExecRequest) (services.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return services.ExecResult{}, err
	}
	res := services.ExecResult{Lines: make([]services.LineResult, len(req.Lines))}
	now := time.Now()
	for i, line := range req.Lines {
		res.Lines[i] = services.LineResult{Line: line, Start: now}
	}
	return res, nil
}

// String describes the service for logs.
func (s *LocalExecService) String() string { return "MockLocalExecService" }

// RemoteExecService is mlos_bench's MockRemoteExecService.
type RemoteExecService struct{}

// RemoteExec runs nothing and succeeds with no output.
func (*RemoteExecService) RemoteExec(ctx context.Context, req services.RemoteExecRequest) (services.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return services.ExecResult{}, err
	}
	return services.ExecResult{}, nil
}

// String describes the service for logs.
func (*RemoteExecService) String() string { return "MockRemoteExecService" }

// VMService is mlos_bench's MockVMService: every host and OS operation
// succeeds at once.
type VMService struct{}

// ProvisionHost succeeds and returns no parameters.
func (*VMService) ProvisionHost(ctx context.Context, _ services.Params) (services.Params, error) {
	return services.Params{}, ctx.Err()
}

// DeprovisionHost succeeds.
func (*VMService) DeprovisionHost(ctx context.Context, _ services.Params) error { return ctx.Err() }

// DeallocateHost succeeds.
func (*VMService) DeallocateHost(ctx context.Context, _ services.Params) error { return ctx.Err() }

// StartHost succeeds.
func (*VMService) StartHost(ctx context.Context, _ services.Params) error { return ctx.Err() }

// StopHost succeeds.
func (*VMService) StopHost(ctx context.Context, _ services.Params, _ bool) error { return ctx.Err() }

// RestartHost succeeds.
func (*VMService) RestartHost(ctx context.Context, _ services.Params, _ bool) error {
	return ctx.Err()
}

// Shutdown succeeds.
func (*VMService) Shutdown(ctx context.Context, _ services.Params, _ bool) error { return ctx.Err() }

// Reboot succeeds.
func (*VMService) Reboot(ctx context.Context, _ services.Params, _ bool) error { return ctx.Err() }

// String describes the service for logs.
func (*VMService) String() string { return "MockVMService" }

// NetworkService is mlos_bench's MockNetworkService.
type NetworkService struct{}

// ProvisionNetwork succeeds and returns no parameters.
func (*NetworkService) ProvisionNetwork(ctx context.Context, _ services.Params) (services.Params, error) {
	return services.Params{}, ctx.Err()
}

// DeprovisionNetwork succeeds.
func (*NetworkService) DeprovisionNetwork(ctx context.Context, _ services.Params, _ bool) error {
	return ctx.Err()
}

// String describes the service for logs.
func (*NetworkService) String() string { return "MockNetworkService" }

// Transfer is one upload or download MockFileShareService was asked for.
type Transfer struct {
	From, To  string
	Recursive bool
}

// FileShareService is mlos_bench's MockFileShareService: it copies
// nothing and records what it was asked to copy.
type FileShareService struct {
	mu                 sync.Mutex
	uploads, downloads []Transfer
}

// Upload records the upload and succeeds.
func (s *FileShareService) Upload(ctx context.Context, _ services.Params, localPath, remotePath string, recursive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uploads = append(s.uploads, Transfer{From: localPath, To: remotePath, Recursive: recursive})
	return nil
}

// Download records the download and succeeds.
func (s *FileShareService) Download(ctx context.Context, _ services.Params, remotePath, localPath string, recursive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.downloads = append(s.downloads, Transfer{From: remotePath, To: localPath, Recursive: recursive})
	return nil
}

// Uploads returns the uploads asked for so far (local path → remote path).
func (s *FileShareService) Uploads() []Transfer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transfer(nil), s.uploads...)
}

// Downloads returns the downloads asked for so far (remote path → local
// path).
func (s *FileShareService) Downloads() []Transfer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Transfer(nil), s.downloads...)
}

// String describes the service for logs.
func (s *FileShareService) String() string { return "MockFileShareService" }

// AuthService is mlos_bench's MockAuthService.
type AuthService struct{}

// AccessToken returns "TOKEN".
func (*AuthService) AccessToken(ctx context.Context) (string, error) {
	return AccessToken, ctx.Err()
}

// String describes the service for logs.
func (*AuthService) String() string { return "MockAuthService" }
