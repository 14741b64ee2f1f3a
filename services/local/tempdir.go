package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// tempDirs hands out working directories: the configured one, or a fresh
// one per call under os.TempDir().
type tempDirs struct {
	fixed string // the configured temp_dir, absolute; "" for none
	keep  bool
	log   *slog.Logger
}

func newTempDirs(cfg TempDirConfig, searchPath []string, log *slog.Logger) (tempDirs, error) {
	t := tempDirs{keep: cfg.KeepTempDir, log: log}
	if cfg.TempDir == "" {
		return t, nil
	}
	dir := cfg.TempDir
	if !filepath.IsAbs(dir) {
		// As mlos_bench's resolve_path: the first search-path folder where
		// it exists, else relative to the working folder.
		for _, sp := range searchPath {
			if _, err := os.Stat(filepath.Join(sp, dir)); err == nil {
				dir = filepath.Join(sp, dir)
				break
			}
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return t, fmt.Errorf("temp_dir %q: %w", cfg.TempDir, err)
	}
	t.fixed = abs
	return t, nil
}

// TempDir returns the configured temp_dir (created if missing, never
// removed) or a fresh directory whose name includes the sanitized name,
// removed by cleanup unless keep_temp_dir is set.
func (t *tempDirs) TempDir(ctx context.Context, name string) (string, func() error, error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	noop := func() error { return nil }
	if t.fixed != "" {
		if err := os.MkdirAll(t.fixed, 0o755); err != nil {
			return "", nil, fmt.Errorf("create temp_dir: %w", err)
		}
		return t.fixed, noop, nil
	}
	dir, err := os.MkdirTemp("", "bench-"+sanitizeName(name)+"-")
	if err != nil {
		return "", nil, fmt.Errorf("create a temp dir: %w", err)
	}
	if t.keep {
		return dir, func() error {
			t.log.Info("keeping temp dir", "dir", dir, "env", name)
			return nil
		}, nil
	}
	return dir, func() error {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove temp dir: %w", err)
		}
		return nil
	}, nil
}

// sanitizeName makes an environment name usable in a file name: letters,
// digits, '.', '_' and '-' are kept, other characters become '_', and the
// result is at most 48 bytes.
func sanitizeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 48 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), ".")
	if s == "" {
		return "env"
	}
	return s
}

// TempDirContextService is mlos_bench's TempDirContextService: it gives
// environments a working directory per use.
type TempDirContextService struct {
	tempDirs
}

// NewTempDirContext builds a TempDirContextService. A relative temp_dir is
// looked up on opts.SearchPath first, as in mlos_bench.
func NewTempDirContext(cfg TempDirConfig, opts Options) (*TempDirContextService, error) {
	opts = opts.withDefaults()
	td, err := newTempDirs(cfg, opts.SearchPath, opts.Logger)
	if err != nil {
		return nil, err
	}
	return &TempDirContextService{tempDirs: td}, nil
}
