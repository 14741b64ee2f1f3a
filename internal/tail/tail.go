// Package tail reads the lines appended to a file while another process
// writes it (a running trial's progress file), one poll at a time.
package tail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/benchtune/bench/internal/safeio"
)

// Reader follows one file. The zero value is not usable: set Path.
type Reader struct {
	// Path is the file; What names its role in errors ("progress file").
	Path, What string
	// Max bounds the bytes read from the file in all (0: 64 MiB).
	Max int64

	off     int64
	partial []byte
}

// DefaultMax is the default bound on the bytes a Reader reads.
const DefaultMax = 64 << 20

// ErrTooLarge is returned once the file grew past Max.
var ErrTooLarge = errors.New("file too large")

// Lines returns the complete lines (without their newline) written since
// the last call; with final, a last line without a newline too (the
// writer is done). A file that does not exist (yet) has no lines. A file
// that became shorter than what was read (rewritten) is read again from
// its start. A file that is not a regular file is an error.
func (r *Reader) Lines(final bool) ([]string, error) {
	max := r.Max
	if max <= 0 {
		max = DefaultMax
	}
	f, fi, err := safeio.Open(r.Path, r.What)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() < r.off {
		r.off, r.partial = 0, nil
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s %s: %w (%s, the limit is %s)", r.what(), r.Path, ErrTooLarge,
			safeio.FormatSize(fi.Size()), safeio.FormatSize(max))
	}
	var lines []string
	if fi.Size() > r.off {
		buf := make([]byte, fi.Size()-r.off)
		n, err := f.ReadAt(buf, r.off)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s %s: %w", r.what(), r.Path, err)
		}
		buf = buf[:n]
		r.off += int64(n)
		data := append(r.partial, buf...)
		r.partial = nil
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			lines = append(lines, string(bytes.TrimSuffix(data[:i], []byte("\r"))))
			data = data[i+1:]
		}
		r.partial = append([]byte(nil), data...)
	}
	if final && len(r.partial) > 0 {
		lines = append(lines, string(bytes.TrimSuffix(r.partial, []byte("\r"))))
		r.partial = nil
	}
	return lines, nil
}

func (r *Reader) what() string {
	if r.What == "" {
		return "file"
	}
	return r.What
}
