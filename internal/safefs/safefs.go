// Package safefs writes files and folders under a local root folder so
// that nothing is ever written outside it, whatever symbolic links or ".."
// entries the tree holds: every access goes through an os.Root, which
// resolves each path component beneath the root (openat with
// RESOLVE_BENEATH semantics on Linux). Downloads, file shares and the
// files an environment dumps for its scripts write through it, so that a
// symbolic link a trial planted in its working folder cannot redirect a
// later write.
package safefs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ErrOutside is wrapped by the errors of writes whose path would leave the
// root, through "..", an absolute path or a symbolic link.
var ErrOutside = errors.New("path leaves its root folder")

// Dir is an open root folder. Paths given to its methods are relative to
// it, with the platform's separator.
type Dir struct {
	root *os.Root
	path string
}

// Open opens the folder dir as a root, creating it (and its parents) when
// it does not exist. dir itself is taken as given (a caller that must
// also contain dir checks it, or opens a Dir on an ancestor).
func Open(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{root: r, path: dir}, nil
}

// Close releases the root.
func (d *Dir) Close() error { return d.root.Close() }

// Path returns the folder's path as given to Open.
func (d *Dir) Path() string { return d.path }

// Join returns the full path of rel (for messages).
func (d *Dir) Join(rel string) string { return filepath.Join(d.path, rel) }

// check refuses paths that are not local (absolute, or climbing with "..").
func check(rel string) error {
	if rel != "." && !filepath.IsLocal(rel) {
		return fmt.Errorf("%q: %w", rel, ErrOutside)
	}
	return nil
}

// wrap turns os.Root's escape errors into ErrOutside.
func (d *Dir) wrap(rel string, err error) error {
	if err == nil {
		return nil
	}
	if escapes(err) {
		return fmt.Errorf("%s: %w %s (a symbolic link or \"..\" points outside it)", d.Join(rel), ErrOutside, d.path)
	}
	return err
}

// escapes reports whether err is os.Root's refusal of a path that leaves
// the root (its error value is not exported: it is recognized by text,
// at the bottom of the chain of wrapped errors).
func escapes(err error) bool {
	for err != nil {
		if err.Error() == "path escapes from parent" {
			return true
		}
		err = errors.Unwrap(err)
	}
	return false
}

// MkdirAll creates the folder rel and its parents under the root.
func (d *Dir) MkdirAll(rel string) error {
	if err := check(rel); err != nil {
		return err
	}
	if rel == "." {
		return nil
	}
	return d.wrap(rel, d.root.MkdirAll(rel, 0o755))
}

// Stat describes rel, following symbolic links only inside the root.
func (d *Dir) Stat(rel string) (fs.FileInfo, error) {
	if err := check(rel); err != nil {
		return nil, err
	}
	fi, err := d.root.Stat(rel)
	return fi, d.wrap(rel, err)
}

// WriteFile writes the file rel under the root: fill writes the content
// into a new hidden temporary file next to it, which then gets perm (and
// mtime, unless zero) and is renamed over rel. Parent folders are
// created. A symbolic link at rel itself is replaced, never followed; one
// among its parents may only point inside the root. On any error the
// temporary file is removed and rel is left as it was.
func (d *Dir) WriteFile(ctx context.Context, rel string, perm fs.FileMode, mtime time.Time, fill func(f *os.File) error) (err error) {
	if err := check(rel); err != nil {
		return err
	}
	if rel == "." {
		return fmt.Errorf("%s is the destination folder itself, not a file", d.path)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	parent := filepath.Dir(rel)
	if err := d.MkdirAll(parent); err != nil {
		return err
	}
	if fi, err := d.root.Lstat(rel); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a folder; cannot write a file there", d.Join(rel))
	}
	tmp := filepath.Join(parent, TempName(filepath.Base(rel)))
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return d.wrap(tmp, err)
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = d.root.Remove(tmp)
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	closed = true
	if err = f.Close(); err != nil {
		return err
	}
	if !mtime.IsZero() {
		_ = d.root.Chtimes(tmp, time.Now(), mtime)
	}
	if err = d.wrap(rel, d.root.Rename(tmp, rel)); err != nil {
		return err
	}
	return nil
}

// WriteBytes is WriteFile with fixed content.
func (d *Dir) WriteBytes(ctx context.Context, rel string, data []byte, perm fs.FileMode) error {
	return d.WriteFile(ctx, rel, perm, time.Time{}, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// Copy is WriteFile filled from src, checking ctx between chunks.
func (d *Dir) Copy(ctx context.Context, rel string, src io.Reader, perm fs.FileMode, mtime time.Time) error {
	return d.WriteFile(ctx, rel, perm, mtime, func(f *os.File) error {
		_, err := io.Copy(f, ctxReader{ctx, src})
		return err
	})
}

// WriteFileAt writes the file at path (its folder is the root: a symbolic
// link at path is replaced, not followed).
func WriteFileAt(ctx context.Context, path string, perm fs.FileMode, mtime time.Time, fill func(f *os.File) error) error {
	d, err := Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(ctx, filepath.Base(path), perm, mtime, fill)
}

// TempName is a hidden, unique name for a file being written next to base.
func TempName(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	if len(base) > 100 {
		base = base[:100]
	}
	return "." + base + ".bench-tmp-" + hex.EncodeToString(b[:])
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
