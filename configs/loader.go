// Package configs loads bench's (and mlos_bench's) JSON5 configs: search
// paths, built-in configs, schema validation, globals and their precedence,
// and the variable-expansion rules.
package configs

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/safeio"
)

//go:embed builtin
var builtinFS embed.FS

// BuiltinPrefix marks a resolved path that names a built-in config
// embedded in the binary, e.g. "builtin:storage/sqlite.jsonc".
const BuiltinPrefix = "builtin:"

// Builtin returns the tree of built-in configs (the last entry of every
// search path).
func Builtin() fs.FS {
	sub, err := fs.Sub(builtinFS, "builtin")
	if err != nil {
		panic(err) // the embedded tree always has this folder
	}
	return sub
}

// Kind names a config kind (the schema a document is validated against).
type Kind string

// Config kinds, matching the schemas package.
const (
	KindCLI           Kind = "cli"
	KindGlobals       Kind = "globals"
	KindEnvironment   Kind = "environment"
	KindService       Kind = "service"
	KindOptimizer     Kind = "optimizer"
	KindScheduler     Kind = "scheduler"
	KindStorage       Kind = "storage"
	KindTunableParams Kind = "tunable-params"
	KindTunableValues Kind = "tunable-values"
	KindEngine        Kind = "engine"
)

// ValidateFunc validates a document against the schema of a kind.
type ValidateFunc func(kind Kind, doc *source.Doc) error

// Loader finds and reads configs along a search path: the working folder,
// then the given config paths, then the built-in configs.
type Loader struct {
	paths []string
	// fallback folders are searched after the built-in configs (WithFallback).
	fallback []string
	validate ValidateFunc
	// maxFile is the most bytes a config file may have (0: the default,
	// safeio.DefaultConfigLimit).
	maxFile int64
	// seen records the keys of the documents read (seenkeys.go); shared
	// with the loaders made from this one.
	seen *seenKeys
	// warn collects the warnings about the files read (duplicate keys),
	// shared by the loaders derived from this one.
	warn *warnings
}

// warnings holds what a loader warns about until someone listens
// (OnWarning), then passes each new one on, once.
type warnings struct {
	mu      sync.Mutex
	seen    map[string]bool
	pending []string
	out     func(string)
}

func (w *warnings) add(msg string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[msg] {
		return
	}
	w.seen[msg] = true
	if w.out != nil {
		w.out(msg)
		return
	}
	w.pending = append(w.pending, msg)
}

// OnWarning passes every warning about the config files this loader (and
// those derived from it) read to f: those so far at once, later ones as
// they come. A key given twice in one object is such a warning (the last
// value wins, as in mlos_bench), in bench validate's words.
func (l *Loader) OnWarning(f func(string)) {
	w := l.warn
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out = f
	for _, m := range w.pending {
		f(m)
	}
	w.pending = nil
}

// MaxConfigFileSizeKey is the global (and command-line option) that
// raises the size limit of config files, e.g. --max_config_file_size 64MiB.
const MaxConfigFileSizeKey = "max_config_file_size"

// SetMaxFileSize sets the most bytes a config file may have (0 or less:
// the default, 16 MiB).
func (l *Loader) SetMaxFileSize(n int64) { l.maxFile = n }

// configLimit describes the config-file limit for safeio.
func configLimit(n int64) safeio.Limit {
	return safeio.Limit{Bytes: n, What: "config file",
		Hint: "raise it with --" + MaxConfigFileSizeKey + " SIZE, e.g. 64MiB"}
}

// SkipValidationEnv lists the environment variables that turn schema
// validation off (mlos_bench's name and ours) when set to true/1/yes/y/on.
var SkipValidationEnv = []string{"BENCH_SKIP_SCHEMA_VALIDATION", "MLOS_BENCH_SKIP_SCHEMA_VALIDATION"}

func skipValidation() bool {
	for _, name := range SkipValidationEnv {
		switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
		case "true", "1", "yes", "y", "on":
			return true
		}
	}
	return false
}

// NewLoader returns a loader searching the working folder, then
// configPaths (made absolute, duplicates dropped), then the built-in
// configs. validate may be nil to skip schema validation.
func NewLoader(validate ValidateFunc, configPaths ...string) (*Loader, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("cannot determine the working folder: %w", err)
	}
	l := &Loader{validate: validate, seen: &seenKeys{}, warn: &warnings{seen: map[string]bool{}}}
	l.add(cwd)
	for _, p := range configPaths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("config path %q: %w", p, err)
		}
		l.add(abs)
	}
	if skipValidation() {
		l.validate = nil
	}
	return l, nil
}

func (l *Loader) add(dir string) {
	dir = filepath.Clean(dir)
	for _, p := range l.paths {
		if p == dir {
			return
		}
	}
	l.paths = append(l.paths, dir)
}

// WithPaths returns a loader that also searches the given paths (after the
// existing ones, before the built-in configs).
func (l *Loader) WithPaths(configPaths ...string) (*Loader, error) {
	c := &Loader{paths: append([]string(nil), l.paths...), fallback: l.fallback, validate: l.validate, maxFile: l.maxFile, seen: l.seen, warn: l.warn}
	for _, p := range configPaths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("config path %q: %w", p, err)
		}
		c.add(abs)
	}
	return c, nil
}

// WithSearchPath returns a loader that searches the given folders (made
// absolute, duplicates dropped) in place of the loader's own, then the
// built-in configs, then the loader's fallback folders: the search path of
// a ConfigPersistenceService.
func (l *Loader) WithSearchPath(paths []string) (*Loader, error) {
	c := &Loader{fallback: l.fallback, validate: l.validate, maxFile: l.maxFile, seen: l.seen, warn: l.warn}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("config path %q: %w", p, err)
		}
		c.add(abs)
	}
	return c, nil
}

// Paths returns the search path folders (without the built-in configs,
// which come last).
func (l *Loader) Paths() []string { return append([]string(nil), l.paths...) }

// Resolve finds a file: an absolute path is returned as it is; a relative
// one is looked up in extra folders, then the search path, then the
// built-in configs ("builtin:..."); when nothing matches, p is returned
// unchanged (as mlos_bench does) so that the caller's error names it.
func (l *Loader) Resolve(p string, extra ...string) string {
	if p == "" || filepath.IsAbs(p) || strings.HasPrefix(p, BuiltinPrefix) {
		return p
	}
	for _, dir := range append(append([]string(nil), extra...), l.paths...) {
		full := filepath.Join(dir, p)
		if _, err := os.Stat(full); err == nil {
			return full
		}
	}
	if rel := path.Clean(filepath.ToSlash(p)); fs.ValidPath(rel) {
		if _, err := fs.Stat(Builtin(), rel); err == nil {
			return BuiltinPrefix + rel
		}
	}
	for _, dir := range l.fallback {
		full := filepath.Join(dir, p)
		if _, err := os.Stat(full); err == nil {
			return full
		}
	}
	return p
}

// WithFallback returns a loader that also searches dir after everything
// mlos_bench searches (the built-in configs included): the CLI config's
// own folder, so that `bench --config /elsewhere/cli.jsonc` works from
// any folder without changing what mlos_bench's order finds.
func (l *Loader) WithFallback(dir string) *Loader {
	c := *l
	c.paths = append([]string(nil), l.paths...)
	c.fallback = append(append([]string(nil), l.fallback...), filepath.Clean(dir))
	return &c
}

// IsInline reports whether a config argument is inline JSON rather than a
// path (mlos_bench: it contains '{' or '[').
func IsInline(spec string) bool { return strings.ContainsAny(spec, "{[") }

// ReadFile reads a resolved config path (including "builtin:" ones) with
// the default size limit: only a regular file is read, never more than 16
// MiB of it (see internal/safeio).
func ReadFile(p string) ([]byte, error) {
	return ReadFileLimit(context.Background(), p, configLimit(0), safeio.DefaultConfigLimit)
}

// ReadFile reads a resolved config path with the loader's size limit.
func (l *Loader) ReadFile(p string) ([]byte, error) {
	return ReadFileLimit(context.Background(), p, configLimit(l.maxFile), safeio.DefaultConfigLimit)
}

// ReadFileLimit reads a resolved path (including "builtin:" ones) that
// bench reads on a user's behalf: only a regular file (through symlinks),
// at most lim.Bytes of it (def when unset), under ctx.
func ReadFileLimit(ctx context.Context, p string, lim safeio.Limit, def int64) ([]byte, error) {
	if rel, ok := strings.CutPrefix(p, BuiltinPrefix); ok {
		return fs.ReadFile(Builtin(), rel)
	}
	return safeio.ReadFile(ctx, p, lim, def)
}

// ReadDoc parses a config given as a path (resolved on the search path) or
// as inline JSON5, without schema validation.
func (l *Loader) ReadDoc(spec string) (*source.Doc, error) {
	var doc *source.Doc
	if IsInline(spec) {
		d, err := source.Parse("<inline config>", []byte(spec))
		if err != nil {
			return nil, err
		}
		doc = d
	} else {
		resolved := l.Resolve(spec)
		data, err := l.ReadFile(resolved)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, &source.Error{File: spec, Err: &NotFoundError{Spec: spec, Searched: l.Paths()}}
			}
			return nil, &source.Error{File: resolved, Msg: "cannot read config", Err: err}
		}
		root, dups, err := json5.ParseDuplicates(data)
		if err != nil {
			if bytes.HasPrefix(data, []byte("SQLite format 3\x00")) {
				// A database given where a config goes, usually --storage.
				return nil, &source.Error{File: resolved, Msg: `an SQLite database, not a config file: --storage takes a storage config file that names the database ("database" in a copy of the built-in storage/sqlite.jsonc); without --storage, bench uses bench.sqlite in the working folder`}
			}
			return source.Parse(resolved, data) // the error, located
		}
		shown := shownPath(resolved)
		for _, d := range dups {
			l.warn.add(source.DuplicateWarning(shown, d))
		}
		doc = &source.Doc{File: resolved, Root: root}
	}
	l.seen.add(doc.Root)
	return doc, nil
}

// shownPath is a config's path for a warning: relative to the working
// folder when it is inside it.
func shownPath(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	if cwd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(cwd, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	return p
}

// NotFoundError is the error of a config file that is on no folder of the
// search path (nor among the built-in configs).
type NotFoundError struct {
	Spec string
	// Searched are the search path folders (the built-in configs come
	// after them).
	Searched []string
}

func (e *NotFoundError) Error() string {
	msg := withHint(fmt.Sprintf("config file not found (searched %s and the built-in configs)", strings.Join(e.Searched, ", ")), e.Spec)
	switch strings.ToLower(path.Ext(e.Spec)) {
	case ".sqlite", ".sqlite3", ".db":
		// Usually --storage given a database file.
		msg += `; a database file is not a config: --storage takes a storage config file that names the database ("database" in a copy of the built-in storage/sqlite.jsonc)`
	}
	return msg
}

// LocateNotFound re-locates err at the list entry that names the missing
// file: when err (or what it wraps) is a NotFoundError for one of specs,
// the error returned names the file, line, column and JSON path of that
// entry of the list that list points at. Other errors, and errors already
// located (a file missing from a nested include), are returned unchanged.
func LocateNotFound(err error, list source.Ref, specs []string) error {
	return relocate(err, func(spec string) (source.Ref, bool) {
		i := slices.Index(specs, spec)
		return list.Index(i), i >= 0 && list.Doc != nil
	})
}

// relocate re-locates a missing-file error at the config value at returns
// for its file name (when at finds one).
func relocate(err error, at func(spec string) (source.Ref, bool)) error {
	var nf *NotFoundError
	var located *source.Error
	if err == nil || !errors.As(err, &nf) || (errors.As(err, &located) && located.Pos.Line > 0) {
		return err
	}
	ref, ok := at(nf.Spec)
	if !ok {
		return err
	}
	e := ref.Errorf("included file %q", nf.Spec)
	e.Err = nf
	return e
}

// Load reads a config and validates it against the schema of kind.
func (l *Loader) Load(spec string, kind Kind) (*source.Doc, error) {
	doc, err := l.ReadDoc(spec)
	if err != nil {
		return nil, err
	}
	if err := l.Validate(kind, doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// Validate checks doc against the schema of kind (unless validation is
// switched off).
func (l *Loader) Validate(kind Kind, doc *source.Doc) error {
	if l.validate == nil {
		return nil
	}
	return l.validate(kind, doc)
}

// Object returns the top-level object of a document as a plain map without
// its "$schema" key; a document that is not an object is an error.
func Object(doc *source.Doc) (map[string]any, error) {
	m, ok := doc.Root.Value().(map[string]any)
	if !ok {
		return nil, doc.Errorf(nil, "expected a JSON object, got %s", doc.Root.Kind)
	}
	delete(m, "$schema")
	return m, nil
}
