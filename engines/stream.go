package engines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrNotFound is wrapped by DownloadURL's error when the object does not
// exist.
var ErrNotFound = errors.New("no such object")

// StreamStore is a Store that also moves large objects (a checkpoint
// archive) without holding them in memory.
type StreamStore interface {
	Store
	// Download writes the object's bytes to w (an error wrapping
	// ErrNotFound when there is none).
	Download(ctx context.Context, url string, w io.Writer) error
	// Upload puts size bytes read from r as the object (visible whole or
	// not at all).
	Upload(ctx context.Context, url string, r io.ReadSeeker, size int64) error
}

// DownloadURL writes the object at u to w: a URL of a registered scheme
// whose store streams (StreamStore), or a local path. A missing object
// gives an error wrapping ErrNotFound.
func DownloadURL(ctx context.Context, u string, w io.Writer) error {
	s, ok := storeFor(u)
	if ok {
		ss, ok := s.(StreamStore)
		if !ok {
			return fmt.Errorf("%s: this store cannot download large objects", u)
		}
		return ss.Download(ctx, u, w)
	}
	if strings.Contains(u, "://") || strings.HasPrefix(u, "env:") {
		return fmt.Errorf("%s: unknown URL scheme", u)
	}
	f, err := os.Open(u)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", u, ErrNotFound)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

// UploadURL puts the content of the file f (from its start) at u: a URL of
// a registered scheme whose store streams, or a local path (written to a
// temporary file and renamed).
func UploadURL(ctx context.Context, u string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s, ok := storeFor(u)
	if ok {
		ss, ok := s.(StreamStore)
		if !ok {
			return fmt.Errorf("%s: this store cannot upload large objects", u)
		}
		return ss.Upload(ctx, u, f, fi.Size())
	}
	if strings.Contains(u, "://") || strings.HasPrefix(u, "env:") {
		return fmt.Errorf("%s: cannot write there", u)
	}
	tmp := u + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, f); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, u)
}
