package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchtune/bench/internal/safefs"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/services"
)

// ErrOutsideRoot is wrapped by the errors of LocalDirFileShareService for
// remote paths that would leave the share's root folder.
var ErrOutsideRoot = errors.New("path leaves the file share's root folder")

// LocalDirFileShareService is a services.FileShare whose remote side is a
// folder of this machine (for example an NFS mount or a shared disk).
// Remote paths are relative to the root (an absolute path is accepted when
// it lies inside the root) and can never leave it, through ".." or through
// symbolic links. Every file is written to a temporary name and renamed,
// so a reader never sees half a file, and keeps its permission bits.
type LocalDirFileShareService struct {
	root     string // absolute
	rootReal string // root with symbolic links resolved
	log      *slog.Logger
}

// NewLocalDirFileShare builds the service. The root must be an existing
// folder unless cfg.CreateRoot is set; a relative root is relative to the
// working folder.
func NewLocalDirFileShare(cfg FileShareConfig, opts Options) (*LocalDirFileShareService, error) {
	opts = opts.withDefaults()
	if cfg.Root == "" {
		return nil, errors.New("the file share's root folder is not set")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("file share root %q: %w", cfg.Root, err)
	}
	if cfg.CreateRoot && opts.ValidateOnly {
		// A run creates the root; bench validate leaves the disk alone.
		return &LocalDirFileShareService{root: root, rootReal: root, log: opts.Logger}, nil
	}
	if cfg.CreateRoot {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, fmt.Errorf("create file share root: %w", err)
		}
	}
	fi, err := os.Stat(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("file share root %s does not exist (create it, or set create_root): %w", root, err)
		}
		return nil, fmt.Errorf("file share root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("file share root %s is not a folder", root)
	}
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, fmt.Errorf("file share root: %w", err)
	}
	return &LocalDirFileShareService{root: root, rootReal: resolved, log: opts.Logger}, nil
}

// Root returns the share's root folder.
func (s *LocalDirFileShareService) Root() string { return s.root }

// remoteRel turns a remote path into a path relative to the root ("." for
// the root itself), refusing paths that leave it.
func (s *LocalDirFileShareService) remoteRel(remote string) (string, error) {
	p := filepath.Clean(remote)
	if remote == "" {
		return "", fmt.Errorf("empty remote path")
	}
	if filepath.IsAbs(p) {
		for _, base := range []string{s.root, s.rootReal} {
			if r, err := filepath.Rel(base, p); err == nil && (r == "." || filepath.IsLocal(r)) {
				return r, nil
			}
		}
		return "", fmt.Errorf("remote path %q: %w %s", remote, ErrOutsideRoot, s.root)
	}
	if p != "." && !filepath.IsLocal(p) {
		return "", fmt.Errorf("remote path %q: %w %s", remote, ErrOutsideRoot, s.root)
	}
	return p, nil
}

// checkInside refuses a relative path whose existing part resolves,
// through symbolic links, to a place outside the root. os.Root enforces
// the same rule on every access; this check gives a clear error first.
func (s *LocalDirFileShareService) checkInside(rel string) error {
	p := filepath.Join(s.root, rel)
	// Resolve the longest existing prefix.
	suffix := ""
	for {
		resolved, err := filepath.EvalSymlinks(p)
		if err == nil {
			full := filepath.Join(resolved, suffix)
			r, err := filepath.Rel(s.rootReal, full)
			if err != nil || !(r == "." || filepath.IsLocal(r)) {
				return fmt.Errorf("remote path %q resolves to %s: %w %s", rel, full, ErrOutsideRoot, s.root)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remote path %q: %w", rel, err)
		}
		// A dangling link in the last component: read where it points.
		if target, lerr := os.Readlink(p); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(p), target)
			}
			p = filepath.Clean(target)
			continue
		}
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		suffix = filepath.Join(filepath.Base(p), suffix)
		p = parent
	}
}

func (s *LocalDirFileShareService) openRoot() (*os.Root, error) {
	r, err := os.OpenRoot(s.root)
	if err != nil {
		return nil, fmt.Errorf("open file share root: %w", err)
	}
	return r, nil
}

// Upload copies localPath (a file, or a folder's contents) to remotePath
// under the root, creating parent folders. Without recursive, only the
// files directly inside a folder are copied. A missing localPath wraps
// fs.ErrNotExist. params are not used by this share.
func (s *LocalDirFileShareService) Upload(ctx context.Context, params services.Params, localPath, remotePath string, recursive bool) error {
	rel, err := s.remoteRel(remotePath)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	fi, err := os.Stat(localPath)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	s.log.Info("file share: upload", "from", localPath, "to", filepath.Join(s.root, rel), "recursive", recursive)
	root, err := s.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if fi.IsDir() {
		return s.uploadDir(ctx, root, localPath, rel, fi, recursive, nil)
	}
	return s.uploadFile(ctx, root, localPath, rel, fi)
}

func (s *LocalDirFileShareService) uploadDir(ctx context.Context, root *os.Root, local, rel string, fi os.FileInfo, recursive bool, seen []os.FileInfo) error {
	for _, prev := range seen {
		if os.SameFile(prev, fi) {
			s.log.Warn("file share: loop in folders, skipping", "path", local)
			return nil
		}
	}
	seen = append(seen, fi)
	if err := s.checkInside(rel); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return fmt.Errorf("upload: create folder %s: %w", rel, err)
	}
	entries, err := os.ReadDir(local)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		lp := filepath.Join(local, e.Name())
		rp := filepath.Join(rel, e.Name())
		efi, err := os.Stat(lp) // follows links, as a copy does
		if err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		switch {
		case efi.IsDir():
			if recursive {
				if err := s.uploadDir(ctx, root, lp, rp, efi, recursive, seen); err != nil {
					return err
				}
			}
		case efi.Mode().IsRegular():
			if err := s.uploadFile(ctx, root, lp, rp, efi); err != nil {
				return err
			}
		default:
			s.log.Warn("file share: not a regular file, skipping", "path", lp)
		}
	}
	return nil
}

func (s *LocalDirFileShareService) uploadFile(ctx context.Context, root *os.Root, local, rel string, fi os.FileInfo) error {
	if rel == "." {
		return fmt.Errorf("upload %s: the remote path names the share's root folder, not a file", local)
	}
	if err := s.checkInside(rel); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	src, _, err := safeio.Open(local, "file to upload") // never a FIFO or a device
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	defer src.Close()
	dir := filepath.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("upload: create folder %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, tempName(filepath.Base(rel)))
	dst, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	err = copyFile(ctx, dst, src, fi.Mode().Perm())
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return fmt.Errorf("upload %s to %s: %w", local, rel, err)
	}
	return nil
}

// Download copies remotePath (a file, or a folder's contents) under the
// root to localPath, creating parent folders. Without recursive, only the
// files directly inside a folder are copied. A missing remotePath wraps
// fs.ErrNotExist. params are not used by this share.
func (s *LocalDirFileShareService) Download(ctx context.Context, params services.Params, remotePath, localPath string, recursive bool) error {
	rel, err := s.remoteRel(remotePath)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	if err := s.checkInside(rel); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	root, err := s.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return fmt.Errorf("download %s: %w", remotePath, err)
	}
	s.log.Info("file share: download", "from", filepath.Join(s.root, rel), "to", localPath, "recursive", recursive)
	if fi.IsDir() {
		return s.downloadDir(ctx, root, rel, localPath, recursive)
	}
	return s.downloadFile(ctx, root, rel, localPath, fi)
}

func (s *LocalDirFileShareService) downloadDir(ctx context.Context, root *os.Root, rel, local string, recursive bool) error {
	// Every entry is written through an os.Root on the destination folder,
	// so a symbolic link inside it (say one a trial planted) can never
	// send a file elsewhere.
	dst, err := safefs.Open(local)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer dst.Close()
	return s.downloadEntries(ctx, root, rel, dst, ".", recursive)
}

func (s *LocalDirFileShareService) downloadEntries(ctx context.Context, root *os.Root, rel string, dst *safefs.Dir, lrel string, recursive bool) error {
	if err := dst.MkdirAll(lrel); err != nil {
		return fmt.Errorf("download: %w", err)
	}
	d, err := root.Open(rel)
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("download: %w", err)
		}
		rp := filepath.Join(rel, e.Name())
		lp := filepath.Join(lrel, e.Name())
		if err := s.checkInside(rp); err != nil {
			return fmt.Errorf("download: %w", err)
		}
		efi, err := root.Stat(rp) // follows links inside the root only
		if err != nil {
			return fmt.Errorf("download: %w", err)
		}
		switch {
		case efi.IsDir():
			if recursive {
				if err := s.downloadEntries(ctx, root, rp, dst, lp, recursive); err != nil {
					return err
				}
			}
		case efi.Mode().IsRegular():
			if err := s.copyOut(ctx, root, rp, dst, lp, efi); err != nil {
				return err
			}
		default:
			s.log.Warn("file share: not a regular file, skipping", "path", rp)
		}
	}
	return nil
}

func (s *LocalDirFileShareService) downloadFile(ctx context.Context, root *os.Root, rel, local string, fi os.FileInfo) error {
	dst, err := safefs.Open(filepath.Dir(local))
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer dst.Close()
	return s.copyOut(ctx, root, rel, dst, filepath.Base(local), fi)
}

// copyOut copies the share's file rel to lrel under dst.
func (s *LocalDirFileShareService) copyOut(ctx context.Context, root *os.Root, rel string, dst *safefs.Dir, lrel string, fi os.FileInfo) error {
	src, _, err := safeio.OpenIn(root, rel, "file to download") // never a FIFO or a device
	if err != nil {
		return fmt.Errorf("download: %w", err)
	}
	defer src.Close()
	if err := dst.Copy(ctx, lrel, src, fi.Mode().Perm(), time.Time{}); err != nil {
		return fmt.Errorf("download %s to %s: %w", rel, dst.Join(lrel), err)
	}
	return nil
}

// tempName is a hidden, unique name next to the file being written.
func tempName(base string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	if len(base) > 100 {
		base = base[:100]
	}
	return "." + base + ".bench-tmp-" + hex.EncodeToString(b[:])
}

// copyFile copies src into dst, sets its permission bits, syncs and closes
// it. The context is checked between chunks.
func copyFile(ctx context.Context, dst *os.File, src io.Reader, perm fs.FileMode) error {
	_, err := io.Copy(dst, ctxReader{ctx, src})
	if err == nil {
		err = dst.Chmod(perm)
	}
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
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

// String describes the share for logs.
func (s *LocalDirFileShareService) String() string {
	return "LocalDirFileShareService(" + strings.TrimSpace(s.root) + ")"
}
