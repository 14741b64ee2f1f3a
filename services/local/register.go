package local

import (
	"context"
	"fmt"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
)

// The class names each service is registered under: mlos_bench's names
// (as its service schemas list them) and bench's own.
var (
	LocalExecClasses = []string{
		"mlos_bench.services.LocalExecService",
		"mlos_bench.services.local.LocalExecService",
		"mlos_bench.services.local.local_exec.LocalExecService",
	}
	TempDirContextClasses = []string{
		"mlos_bench.services.local.temp_dir_context.TempDirContextService",
	}
	LocalDirFileShareClasses = []string{
		"bench.services.LocalDirFileShareService",
		"bench.services.local.local_dir_fileshare.LocalDirFileShareService",
	}
)

var (
	_ services.LocalExec = (*LocalExecService)(nil)
	_ services.TempDirs  = (*LocalExecService)(nil)
	_ services.TempDirs  = (*TempDirContextService)(nil)
	_ services.FileShare = (*LocalDirFileShareService)(nil)
)

func init() {
	services.Register(newLocalExecFromSpec, LocalExecClasses...)
	services.Register(newTempDirContextFromSpec, TempDirContextClasses...)
	services.Register(newLocalDirFileShareFromSpec, LocalDirFileShareClasses...)
	services.Register(newConfigPersistenceFromSpec, ConfigPersistenceClasses...)
}

// optionsFromSpec takes the config search path from the spec.
func optionsFromSpec(spec services.Spec) (Options, error) {
	sp, err := absAll(spec.SearchPath)
	if err != nil {
		return Options{}, located(spec.Ref, err)
	}
	return Options{SearchPath: sp}, nil
}

func newLocalExecFromSpec(_ context.Context, spec services.Spec) (any, error) {
	cfg, err := ParseConfig(spec.Config, spec.Globals, spec.Ref.Child("config"))
	if err != nil {
		return nil, err
	}
	opts, err := optionsFromSpec(spec)
	if err != nil {
		return nil, err
	}
	svc, err := NewLocalExec(cfg, opts)
	if err != nil {
		return nil, located(spec.Ref.Child("config"), err)
	}
	return svc, nil
}

func newTempDirContextFromSpec(_ context.Context, spec services.Spec) (any, error) {
	cfg, err := ParseTempDirConfig(spec.Config, spec.Globals, spec.Ref.Child("config"))
	if err != nil {
		return nil, err
	}
	opts, err := optionsFromSpec(spec)
	if err != nil {
		return nil, err
	}
	svc, err := NewTempDirContext(cfg, opts)
	if err != nil {
		return nil, located(spec.Ref.Child("config"), err)
	}
	return svc, nil
}

func newLocalDirFileShareFromSpec(_ context.Context, spec services.Spec) (any, error) {
	cfg, err := ParseFileShareConfig(spec.Config, spec.Globals, spec.Ref.Child("config"))
	if err != nil {
		return nil, err
	}
	svc, err := NewLocalDirFileShare(cfg, Options{ValidateOnly: spec.ValidateOnly})
	if err != nil {
		return nil, located(spec.Ref.Child("config").Child("root"), err)
	}
	return svc, nil
}

// located attaches a config location to err, keeping it wrapped.
func located(ref source.Ref, err error) error {
	e := ref.Errorf("")
	e.Err = err
	return e
}

// String describes the service for logs.
func (s *LocalExecService) String() string {
	return fmt.Sprintf("LocalExecService(abort_on_error=%t)", s.cfg.AbortOnError)
}
