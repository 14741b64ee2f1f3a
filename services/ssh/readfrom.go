package ssh

import (
	"context"
	"errors"
	"io"

	"github.com/pkg/sftp"
)

// ReadFrom returns at most max bytes of a remote file from offset off
// (none past its end); a missing file gives an error wrapping
// fs.ErrNotExist. It reads a file another process appends to (a job's
// progress file) piece by piece.
func (h *Host) ReadFrom(ctx context.Context, p string, off, max int64) ([]byte, error) {
	var data []byte
	err := h.withSFTP(ctx, "reading "+p, func(sc *sftp.Client, _ string) error {
		f, err := sc.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil {
			return err
		}
		n := min(max, info.Size()-off)
		if n <= 0 {
			return nil
		}
		data = make([]byte, n)
		m, err := f.ReadAt(data, off)
		data = data[:m]
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return err
	})
	return data, err
}
