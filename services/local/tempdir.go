package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"github.com/benchtune/bench/internal/reaper"
)

// tempDirs hands out working directories: the configured one, or a fresh
// (empty) one per call under os.TempDir().
//
// Creating and removing a directory costs 0.14–0.16 ms on ext4 (0.02 ms
// to reuse one; BenchmarkTempDir), a seventh of a trivial trial: a directory that is still empty when its user is done
// is kept as a spare and handed out again (checked empty once more), and
// only directories that something was written to are removed. Close
// removes the spares.
type tempDirs struct {
	fixed string // the configured temp_dir, absolute; "" for none
	keep  bool
	log   *slog.Logger

	mu    sync.Mutex
	spare map[string]string // sanitized name -> empty directory
}

func newTempDirs(cfg TempDirConfig, searchPath []string, log *slog.Logger) (*tempDirs, error) {
	t := &tempDirs{keep: cfg.KeepTempDir, log: log}
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
	key := sanitizeName(name)
	if t.keep {
		// A kept folder has no owner mark: RemoveStaleTempDirs leaves it.
		dir, err := os.MkdirTemp("", "bench-"+key+"-")
		if err != nil {
			return "", nil, fmt.Errorf("create a temp dir: %w", err)
		}
		return dir, func() error {
			t.log.Info("keeping temp dir", "dir", dir, "env", name)
			return nil
		}, nil
	}
	dir := t.takeSpare(key)
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", tempPrefix(key)); err != nil {
			return "", nil, fmt.Errorf("create a temp dir: %w", err)
		}
	}
	var once sync.Once
	return dir, func() (err error) {
		once.Do(func() { err = t.release(key, dir) })
		return err
	}, nil
}

// tempPrefix is the name of a fresh temp folder before its random part:
// bench-<name>-<owner mark>- (internal/reaper), so that a later bench can
// tell the folders of a bench that died (RemoveStaleTempDirs).
func tempPrefix(key string) string {
	o, err := reaper.Self()
	if err != nil {
		return "bench-" + key + "-"
	}
	return "bench-" + key + "-" + o.String() + "-"
}

// MkdirOwnedTemp makes a fresh folder under os.TempDir() named for this
// bench process (bench-<key>-<owner mark>-<random>), so that if bench is
// killed before it removes the folder, its watchdog or a later bench does
// (RemoveTempDirsOf, RemoveStaleTempDirs).
func MkdirOwnedTemp(key string) (string, error) {
	return os.MkdirTemp("", tempPrefix(key))
}

// staleName matches the temp folders tempPrefix names: the owner mark is
// the part before the random suffix.
var staleName = regexp.MustCompile(`^bench-.+-(o[0-9a-f]{8}\.[0-9]+\.[0-9]+)-[0-9]+$`)

// RemoveStaleTempDirs removes the temp folders (under os.TempDir()) that
// LocalExecService or TempDirContextService made for a bench process that
// is no longer alive (killed before it could remove them), and returns
// them. Folders of live bench processes, kept folders (keep_temp_dir),
// configured temp_dir folders, other users' folders and anything that is
// not a plain folder are left alone. Kill the dead owners' processes
// first (reaper.KillStale), so that none writes there while it goes.
func RemoveStaleTempDirs() ([]string, error) {
	return removeStaleTempDirs(os.TempDir())
}

func removeStaleTempDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	uid := os.Getuid()
	var removed []string
	var errs []error
	for _, e := range entries {
		m := staleName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() { // IsDir is false for a symlink
			continue
		}
		o, ok := reaper.ParseOwner(m[1])
		if !ok || o.Alive() || reaper.Released(m[1]) {
			continue
		}
		p := filepath.Join(root, e.Name())
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil || int(st.Uid) != uid {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove stale temp dir: %w", err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// RemoveOwnTempDirs removes this process's temp folders under
// os.TempDir(): for an exit that cannot wait for the usual cleanup.
func RemoveOwnTempDirs() {
	me, err := reaper.Self()
	if err != nil {
		return
	}
	RemoveTempDirsOf(me.String())
}

// RemoveTempDirsOf removes the temp folders under os.TempDir() of the
// bench process with the owner mark: for its watchdog, once it is dead.
func RemoveTempDirsOf(mark string) {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		if m := staleName.FindStringSubmatch(e.Name()); m != nil && m[1] == mark && e.IsDir() {
			_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

// takeSpare returns the spare directory for key if it is still empty
// (a background process of its last user may have written to it since),
// or "".
func (t *tempDirs) takeSpare(key string) string {
	t.mu.Lock()
	dir := t.spare[key]
	delete(t.spare, key)
	t.mu.Unlock()
	if dir == "" {
		return ""
	}
	if empty, err := isEmptyDir(dir); err != nil || !empty {
		_ = os.RemoveAll(dir)
		return ""
	}
	return dir
}

// release keeps an empty directory as the spare for key, and removes it
// otherwise (or when there is a spare already).
func (t *tempDirs) release(key, dir string) error {
	if empty, err := isEmptyDir(dir); err == nil && empty {
		t.mu.Lock()
		if _, taken := t.spare[key]; !taken {
			if t.spare == nil {
				t.spare = map[string]string{}
			}
			t.spare[key] = dir
			t.mu.Unlock()
			return nil
		}
		t.mu.Unlock()
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove temp dir: %w", err)
	}
	return nil
}

// Close removes the spare directories.
func (t *tempDirs) Close() error {
	t.mu.Lock()
	spare := t.spare
	t.spare = nil
	t.mu.Unlock()
	var errs []error
	for _, dir := range spare {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove temp dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// isEmptyDir reports whether dir has no entries.
func isEmptyDir(dir string) (bool, error) {
	f, err := os.Open(dir)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Readdirnames(1); err == io.EOF {
		return true, nil
	} else if err != nil {
		return false, err
	}
	return false, nil
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
	*tempDirs
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

// TempDirOwner reads a temp folder's name as tempPrefix writes it: the
// name it was made for (an environment's or a service's) and the mark of
// the bench process that made it.
func TempDirOwner(dir string) (name string, owner reaper.Owner, ok bool) {
	base := filepath.Base(dir)
	m := staleName.FindStringSubmatch(base)
	if m == nil {
		return "", reaper.Owner{}, false
	}
	if owner, ok = reaper.ParseOwner(m[1]); !ok {
		return "", reaper.Owner{}, false
	}
	name = strings.TrimPrefix(base, "bench-")
	i := strings.LastIndex(name, "-"+m[1]+"-")
	if i < 0 {
		return "", reaper.Owner{}, false
	}
	return name[:i], owner, true
}
