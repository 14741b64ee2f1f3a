package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/benchtune/bench/services"
)

// ConfigPersistenceClasses are mlos_bench's names of the service that
// holds the config search path.
var ConfigPersistenceClasses = []string{
	"mlos_bench.services.ConfigPersistenceService",
	"mlos_bench.services.config_persistence.ConfigPersistenceService",
}

// ConfigPersistenceService is mlos_bench's ConfigPersistenceService. In
// mlos_bench it loads configs; in bench the config loader does that, and
// this service only carries its search path: the working folder, then
// its config_path folders (relative ones against the working folder), the
// built-in configs last. Services built on top of it resolve script
// names on that path, and environments built on a stack that holds it
// find their children's configs (and their own data files) there (see
// services.ConfigSearchPath).
//
// As for every service, a "config_path" global (set by --config_path or
// the CLI config's config_path) replaces the config's config_path.
type ConfigPersistenceService struct {
	paths []string
}

var _ services.ConfigSearchPath = (*ConfigPersistenceService)(nil)

// NewConfigPersistence returns the service for the given config_path
// folders.
func NewConfigPersistence(configPath []string) (*ConfigPersistenceService, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("cannot determine the working folder: %w", err)
	}
	s := &ConfigPersistenceService{paths: []string{filepath.Clean(cwd)}}
	abs, err := absAll(configPath)
	if err != nil {
		return nil, err
	}
	for _, p := range abs {
		if p = filepath.Clean(p); !slices.Contains(s.paths, p) {
			s.paths = append(s.paths, p)
		}
	}
	return s, nil
}

// ConfigSearchPath returns the search path (without the built-in configs).
func (s *ConfigPersistenceService) ConfigSearchPath() []string { return slices.Clone(s.paths) }

// String describes the service for logs.
func (s *ConfigPersistenceService) String() string {
	return fmt.Sprintf("ConfigPersistenceService(config_path=%v)", s.paths)
}

func newConfigPersistenceFromSpec(_ context.Context, spec services.Spec) (any, error) {
	ref := spec.Ref.Child("config")
	var raw struct {
		ConfigPath []string `json:"config_path"`
	}
	if err := decodeKeys(spec.Config, ref, &raw, "config_path"); err != nil {
		return nil, err
	}
	svc, err := NewConfigPersistence(raw.ConfigPath)
	if err != nil {
		return nil, located(ref.Child("config_path"), err)
	}
	return svc, nil
}
