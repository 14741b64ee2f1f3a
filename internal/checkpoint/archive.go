package checkpoint

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxEntries bounds the entries of an archive Unpack accepts (a checkpoint
// is a few files; a hostile archive could hold millions of empty ones).
const MaxEntries = 100000

// ErrUnsafe is wrapped by Unpack's errors for an entry that would land
// outside the directory (an absolute name, "..", a link that leaves it)
// or that is not a plain file, directory or symbolic link.
var ErrUnsafe = errors.New("unsafe checkpoint archive entry")

// Pack writes the tree under dir to w as a gzip-compressed tar archive:
// directories, regular files and symbolic links whose target stays inside
// dir (relative names, '/'-separated). Anything else (a link that leaves
// dir, a socket, a device) is left out and named in skipped. It returns
// the number of entries written.
func Pack(ctx context.Context, dir string, w io.Writer) (entries int, skipped []string, err error) {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
		if werr != nil {
			return werr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		var link string
		switch {
		case info.Mode().IsDir(), info.Mode().IsRegular():
		case info.Mode()&fs.ModeSymlink != 0:
			if link, err = os.Readlink(p); err != nil {
				return err
			}
			if linkEscapes(name, filepath.ToSlash(link)) {
				skipped = append(skipped, name+" (a link to "+link+", outside the checkpoint directory)")
				return nil
			}
		default:
			skipped = append(skipped, name+" (not a file, directory or link)")
			return nil
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = name
		if info.IsDir() {
			h.Name += "/"
		}
		h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		entries++
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if n, err := io.Copy(tw, f); err != nil {
			return err
		} else if n != h.Size {
			return fmt.Errorf("%s changed while it was packed", p)
		}
		return nil
	})
	if err != nil {
		return entries, skipped, err
	}
	if err := tw.Close(); err != nil {
		return entries, skipped, err
	}
	return entries, skipped, gz.Close()
}

// linkEscapes reports whether a symbolic link at name (relative to the
// root, '/'-separated) with target link would point outside the root.
func linkEscapes(name, link string) bool {
	if link == "" || path.IsAbs(link) || strings.HasPrefix(link, "\\") || filepath.IsAbs(link) {
		return true
	}
	return !filepath.IsLocal(filepath.FromSlash(path.Join(path.Dir(name), link)))
}

// Unpack extracts a gzip-compressed tar archive (Pack's) into dir, which
// must exist and should be empty. Every entry is checked before it is
// written: its name must be local (not absolute, no ".." climbing out),
// it must be a directory, a regular file or a symbolic link, and a link's
// target must stay inside dir (a relative target that resolves beneath
// it), and no entry may lie below a link. Everything is written through
// an os.Root on dir, so that a link planted by an earlier entry cannot
// redirect a later one outside it either. Permissions are kept (without setuid, setgid or sticky bits).
// On an error, what was written so far stays in dir (the caller removes
// dir).
func Unpack(ctx context.Context, r io.Reader, dir string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a gzip-compressed archive: %w", err)
	}
	defer gz.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(gz)
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		if n >= MaxEntries {
			return fmt.Errorf("%w: more than %d entries", ErrUnsafe, MaxEntries)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name == "" || name == "." || strings.HasPrefix(h.Name, "/") || strings.Contains(name, "\\") ||
			!filepath.IsLocal(filepath.FromSlash(name)) {
			return fmt.Errorf("%w: %q is not a path inside the checkpoint directory", ErrUnsafe, h.Name)
		}
		rel := filepath.FromSlash(path.Clean(name))
		perm := fs.FileMode(h.Mode).Perm()
		if err := ensureParent(root, rel); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrUnsafe, h.Name, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.Mkdir(rel, perm|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%q: %w", h.Name, err)
			}
		case tar.TypeReg:
			if err := writeEntry(root, rel, perm|0o600, tr); err != nil {
				return fmt.Errorf("%q: %w", h.Name, err)
			}
		case tar.TypeSymlink:
			if linkEscapes(path.Clean(name), h.Linkname) {
				return fmt.Errorf("%w: %q is a link to %q, outside the checkpoint directory", ErrUnsafe, h.Name, h.Linkname)
			}
			if err := root.Symlink(h.Linkname, rel); err != nil {
				return fmt.Errorf("%q: %w", h.Name, err)
			}
		default:
			return fmt.Errorf("%w: %q is of tar type %q, not a file, directory or link", ErrUnsafe, h.Name, string(h.Typeflag))
		}
	}
}

// ensureParent makes rel's parent folders under root, refusing a parent
// that is a symbolic link: an entry is written at the place its name
// says, so that the check of a link's target (relative to that place) is
// exact. (Pack never writes an entry below a link.)
func ensureParent(root *os.Root, rel string) error {
	parent := filepath.Dir(rel)
	if parent == "." {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(parent, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := root.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link: no entry may be below one", filepath.ToSlash(cur))
		case !fi.IsDir():
			return fmt.Errorf("%s is not a directory", filepath.ToSlash(cur))
		}
	}
	return nil
}

// writeEntry writes a regular file, never through an existing link at rel
// itself (an earlier entry's): O_EXCL fails on any existing name.
func writeEntry(root *os.Root, rel string, perm fs.FileMode, src io.Reader) error {
	f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
