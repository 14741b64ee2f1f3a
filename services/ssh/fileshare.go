package ssh

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
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkg/sftp"

	"github.com/benchtune/bench/internal/safefs"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/services"
)

// Upload copies localPath to remotePath on the host named by the
// ssh_hostname parameter. A file goes to remotePath itself, or into it
// when remotePath is an existing directory; a folder (recursive must be
// set) has its content copied into remotePath, which is created. Parent
// directories are created, files are streamed, their permission bits and
// modification times kept. Relative remote paths start at the login
// directory. A missing localPath gives an error wrapping fs.ErrNotExist.
func (s *FileShareService) Upload(ctx context.Context, params services.Params, localPath, remotePath string, recursive bool) error {
	t, err := s.cfg.resolveTarget(params)
	if err != nil {
		return fmt.Errorf("SshFileShareService upload: %w", err)
	}
	info, err := os.Stat(localPath)
	if err != nil {
		return fmt.Errorf("upload to %s: %w", t.addr(), err)
	}
	if info.IsDir() && !recursive {
		return fmt.Errorf("upload to %s: %s is a directory; copying one needs recursive", t.addr(), localPath)
	}
	remotePath = remoteRelPath(remotePath)
	err = s.withSFTP(ctx, t, func(sc *sftp.Client) error {
		if info.IsDir() {
			return uploadDir(ctx, sc, localPath, remotePath)
		}
		dst := remotePath
		if st, err := sc.Stat(remotePath); err == nil && st.IsDir() {
			dst = path.Join(remotePath, filepath.Base(localPath))
		}
		if err := sc.MkdirAll(path.Dir(dst)); err != nil {
			return fmt.Errorf("creating %s: %w", path.Dir(dst), err)
		}
		return uploadFile(ctx, sc, localPath, info, dst)
	})
	if err != nil {
		return fmt.Errorf("upload of %s to %s:%s: %w", localPath, t, remotePath, err)
	}
	return nil
}

// Download copies remotePath on the host to localPath, with the same rules
// as Upload in the other direction. A missing remotePath gives an error
// wrapping fs.ErrNotExist.
func (s *FileShareService) Download(ctx context.Context, params services.Params, remotePath, localPath string, recursive bool) error {
	t, err := s.cfg.resolveTarget(params)
	if err != nil {
		return fmt.Errorf("SshFileShareService download: %w", err)
	}
	remotePath = remoteRelPath(remotePath)
	err = s.withSFTP(ctx, t, func(sc *sftp.Client) error {
		info, err := sc.Stat(remotePath)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s does not exist on the host: %w", remotePath, fs.ErrNotExist)
			}
			return err
		}
		if info.IsDir() {
			if !recursive {
				return fmt.Errorf("%s is a directory; copying one needs recursive", remotePath)
			}
			return downloadDir(ctx, sc, remotePath, localPath)
		}
		dst := localPath
		if st, err := os.Stat(localPath); err == nil && st.IsDir() {
			dst = filepath.Join(localPath, path.Base(remotePath))
		}
		d, err := safefs.Open(filepath.Dir(dst))
		if err != nil {
			return err
		}
		defer d.Close()
		return downloadFile(ctx, sc, remotePath, info, d, filepath.Base(dst))
	})
	if err != nil {
		return fmt.Errorf("download of %s:%s to %s: %w", t, remotePath, localPath, err)
	}
	return nil
}

// withSFTP runs op with the SFTP client of a cached connection. When the
// connection turns out to be broken (e.g. it died while idle), op is run
// once more on a new connection; copies overwrite, so that is safe.
func (s *FileShareService) withSFTP(ctx context.Context, t target, op func(*sftp.Client) error) error {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		var c *conn
		c, err = s.pool.get(ctx, t)
		if err != nil {
			return err
		}
		var sc *sftp.Client
		sc, _, err = c.sftpClient()
		if err == nil {
			err = op(sc)
		}
		if err == nil || ctx.Err() != nil || !isTransportErr(c, err) {
			return err
		}
		slog.Warn("ssh: connection lost during a file transfer; retrying on a new connection", "host", t.addr(), "err", err)
		s.pool.drop(c)
	}
	return err
}

// remoteRelPath turns "~/x" into "x": SFTP paths are relative to the login
// directory already.
func remoteRelPath(p string) string {
	switch {
	case p == "~":
		return "."
	case strings.HasPrefix(p, "~/"):
		return strings.TrimPrefix(p, "~/")
	case p == "":
		return "."
	}
	return p
}

func uploadDir(ctx context.Context, sc *sftp.Client, localRoot, remoteRoot string) error {
	if err := sc.MkdirAll(remoteRoot); err != nil {
		return fmt.Errorf("creating %s: %w", remoteRoot, err)
	}
	return filepath.WalkDir(localRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		rel, err := filepath.Rel(localRoot, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		dst := path.Join(remoteRoot, filepath.ToSlash(rel))
		info, err := os.Stat(p) // follows symlinks
		if err != nil {
			slog.Warn("ssh: skipping an unreadable entry", "path", p, "err", err)
			return nil
		}
		switch {
		case d.IsDir():
			if err := sc.MkdirAll(dst); err != nil {
				return fmt.Errorf("creating %s: %w", dst, err)
			}
			return nil
		case info.IsDir():
			slog.Warn("ssh: not following a symbolic link to a directory", "path", p)
			return nil
		case !info.Mode().IsRegular():
			slog.Warn("ssh: skipping a special file", "path", p, "mode", info.Mode().String())
			return nil
		}
		return uploadFile(ctx, sc, p, info, dst)
	})
}

func downloadDir(ctx context.Context, sc *sftp.Client, remoteRoot, localRoot string) error {
	// Every entry is written through an os.Root on the destination folder,
	// so a symbolic link inside it cannot send a file elsewhere.
	d, err := safefs.Open(localRoot)
	if err != nil {
		return err
	}
	defer d.Close()
	w := sc.Walk(remoteRoot)
	for w.Step() {
		if err := w.Err(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(w.Path(), remoteRoot), "/")
		if rel == "" {
			continue
		}
		lrel := filepath.FromSlash(rel)
		if !filepath.IsLocal(lrel) {
			return fmt.Errorf("the remote entry %q would be written outside %s; refusing it", w.Path(), localRoot)
		}
		info := w.Stat()
		if info.Mode()&fs.ModeSymlink != 0 {
			st, err := sc.Stat(w.Path())
			if err != nil {
				slog.Warn("ssh: skipping a broken symbolic link", "path", w.Path(), "err", err)
				continue
			}
			if st.IsDir() {
				slog.Warn("ssh: not following a symbolic link to a directory", "path", w.Path())
				continue
			}
			info = st
		}
		switch {
		case info.IsDir():
			if err := d.MkdirAll(lrel); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := downloadFile(ctx, sc, w.Path(), info, d, lrel); err != nil {
				return err
			}
		default:
			slog.Warn("ssh: skipping a special file", "path", w.Path(), "mode", info.Mode().String())
		}
	}
	return nil
}

func tmpSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return ".bench-tmp-" + hex.EncodeToString(b[:])
}

// uploadFile streams a local file to a temporary remote file next to dst
// and renames it into place, so dst is never left half written.
func uploadFile(ctx context.Context, sc *sftp.Client, src string, info fs.FileInfo, dst string) error {
	in, _, err := safeio.Open(src, "file to upload") // never a FIFO or a device
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := path.Join(path.Dir(dst), "."+path.Base(dst)+tmpSuffix())
	out, err := sc.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_EXCL)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmp, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = out.Close()
			_ = sc.Remove(tmp)
		}
	}()
	if err := out.Chmod(info.Mode().Perm()); err != nil {
		return fmt.Errorf("setting the mode of %s: %w", tmp, err)
	}
	if _, err := out.ReadFromWithConcurrency(ctxReader{ctx, in}, 0); err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := sc.Chtimes(tmp, time.Now(), info.ModTime()); err != nil {
		slog.Debug("ssh: could not set a file's modification time", "path", dst, "err", err)
	}
	if err := renameRemote(sc, tmp, dst); err != nil {
		return err
	}
	ok = true
	return nil
}

func renameRemote(sc *sftp.Client, from, to string) error {
	if _, ok := sc.HasExtension("posix-rename@openssh.com"); ok {
		if err := sc.PosixRename(from, to); err != nil {
			return fmt.Errorf("renaming %s to %s: %w", from, to, err)
		}
		return nil
	}
	if err := sc.Rename(from, to); err != nil {
		// Plain SFTP rename refuses to replace an existing file.
		if _, serr := sc.Stat(to); serr == nil {
			if rerr := sc.Remove(to); rerr == nil {
				err = sc.Rename(from, to)
			}
		}
		if err != nil {
			return fmt.Errorf("renaming %s to %s: %w", from, to, err)
		}
	}
	return nil
}

// downloadFile streams a remote file to a temporary local file next to
// rel under d and renames it into place.
func downloadFile(ctx context.Context, sc *sftp.Client, src string, info fs.FileInfo, d *safefs.Dir, rel string) error {
	in, err := sc.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist on the host: %w", src, fs.ErrNotExist)
		}
		return err
	}
	defer in.Close()
	return d.WriteFile(ctx, rel, info.Mode().Perm(), info.ModTime(), func(out *os.File) error {
		if _, err := in.WriteTo(ctxWriter{ctx, out}); err != nil {
			return fmt.Errorf("reading %s: %w", src, err)
		}
		return nil
	})
}

// ctxReader and ctxWriter stop a transfer once the context ends.
type ctxReader struct {
	ctx context.Context
	r   *os.File
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.w.Write(p)
}
