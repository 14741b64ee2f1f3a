package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments/internal/script"
	"github.com/benchtune/bench/services"
)

// ErrEscape is wrapped by errors about local paths that would leave the
// environment's working directory.
var ErrEscape = errors.New("path leaves the environment's working directory")

type transfer struct{ from, to string }

func transfers(raw []rawTransfer, ref source.Ref) ([]transfer, error) {
	out := make([]transfer, 0, len(raw))
	for i, r := range raw {
		switch {
		case r.From == nil || *r.From == "":
			return nil, ref.Index(i).Errorf("missing \"from\"")
		case r.To == nil || *r.To == "":
			return nil, ref.Index(i).Errorf("missing \"to\"")
		}
		out = append(out, transfer{from: *r.From, to: *r.To})
	}
	return out, nil
}

// expand templates a transfer's paths with every parameter (under its
// sanitized name, as text) and PWD, the working directory.
func (e *Env) expand(t transfer, dir string) (from, to string) {
	vars := script.AllVars(e.Parameters())
	vars["PWD"] = dir
	lk := configs.MapLookup(vars)
	return configs.Substitute(t.from, lk), configs.Substitute(t.to, lk)
}

func (e *Env) fileShareService() (services.FileShare, error) {
	return script.Need[services.FileShare](e.Services(), e.Name(), e.Class(), "FileShare",
		"LocalDirFileShareService or SshFileShareService")
}

// uploadAll uploads every "upload" entry, after setup.
func (e *Env) uploadAll(ctx context.Context, dir string) error {
	if len(e.upload) == 0 {
		return nil
	}
	share, err := e.fileShareService()
	if err != nil {
		return err
	}
	params := e.Parameters()
	for _, t := range e.upload {
		from, to := e.expand(t, dir)
		local, err := e.uploadSource(from, dir)
		if err == nil {
			start := time.Now()
			err = share.Upload(ctx, params, local, to, true)
			script.RecordTransfer(ctx, e.Name(), "upload", local, to, time.Since(start), err)
		}
		if err != nil {
			return fmt.Errorf("%s: upload %s to %s: %w", e.who(), from, to, script.TimeoutError(ctx, err))
		}
	}
	return nil
}

// downloadAll downloads every "download" entry: before run, where a
// missing file is an error, and before status, where it is skipped.
func (e *Env) downloadAll(ctx context.Context, dir string, ignoreMissing bool) error {
	if len(e.download) == 0 {
		return nil
	}
	share, err := e.fileShareService()
	if err != nil {
		return err
	}
	params := e.Parameters()
	for _, t := range e.download {
		from, to := e.expand(t, dir)
		local, err := localTarget(to, dir)
		if err == nil {
			start := time.Now()
			err = share.Download(ctx, params, from, local, true)
			if !(ignoreMissing && errors.Is(err, fs.ErrNotExist)) {
				script.RecordTransfer(ctx, e.Name(), "download", from, local, time.Since(start), err)
			}
		}
		if err != nil {
			if ignoreMissing && errors.Is(err, fs.ErrNotExist) {
				e.log.Debug("nothing to download yet", "from", from)
				continue
			}
			return fmt.Errorf("%s: download %s to %s: %w", e.who(), from, to, script.TimeoutError(ctx, err))
		}
	}
	return nil
}

// uploadSource resolves the local side of an upload. An absolute path must
// lie in the working directory; a relative one may not climb out with
// "..". It is looked up in the working directory first, then on the config
// search path (as mlos_bench does, so that shipped scripts such as
// "environments/apps/fio/scripts/remote/" can be uploaded).
func (e *Env) uploadSource(from, dir string) (string, error) {
	if filepath.IsAbs(from) {
		if err := checkWithin(dir, from); err != nil {
			return "", err
		}
		return from, nil
	}
	clean := filepath.Clean(from)
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("local path %q: %w", from, ErrEscape)
	}
	p := filepath.Join(dir, clean)
	if _, err := os.Lstat(p); err == nil {
		if err := checkWithin(dir, p); err != nil {
			return "", err
		}
		return p, nil
	}
	if e.loader != nil {
		r := e.loader.Resolve(clean)
		if strings.HasPrefix(r, configs.BuiltinPrefix) {
			return "", fmt.Errorf("%q is a built-in config, which cannot be uploaded; copy it into the working directory with a setup line first", from)
		}
		if r != clean && filepath.IsAbs(r) {
			return r, nil
		}
	}
	return p, nil
}

// localTarget resolves the local side of a download: relative to the
// working directory, which it must not leave.
func localTarget(to, dir string) (string, error) {
	p := to
	if !filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		if !filepath.IsLocal(clean) {
			return "", fmt.Errorf("local path %q: %w", to, ErrEscape)
		}
		p = filepath.Join(dir, clean)
	}
	if err := checkWithin(dir, p); err != nil {
		return "", err
	}
	if strings.HasSuffix(to, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p, nil
}

// checkWithin makes sure p lies inside root once symbolic links are
// resolved (for the part of p that exists).
func checkWithin(root, p string) error {
	rootReal, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	cur := filepath.Clean(p)
	var rest []string
	for {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = parent
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return fmt.Errorf("local path %q: %w", p, err)
	}
	full := filepath.Join(append([]string{real}, rest...)...)
	rel, err := filepath.Rel(rootReal, full)
	if err != nil || !(rel == "." || filepath.IsLocal(rel)) {
		return fmt.Errorf("local path %q: %w", p, ErrEscape)
	}
	return nil
}
