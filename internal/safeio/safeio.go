// Package safeio reads the files bench reads on a user's behalf (configs,
// results and telemetry files, files a trial brought back) so that no such
// file can hang bench or exhaust its memory:
//
//   - only regular files are read: a FIFO, a device (/dev/zero, a tty), a
//     socket or a folder is refused with an error naming the file and what
//     it is. A symlink is followed, and what it points to must be a
//     regular file: a link to a results file elsewhere is fine, a link to
//     /dev/zero is not;
//   - the file is opened with O_NONBLOCK, so that a FIFO swapped in after
//     the check cannot block the open, and checked again on the open
//     descriptor (fstat), which closes the window between check and open;
//   - at most a limit of bytes is read; a larger file is an error naming
//     the file, the limit and how to raise it;
//   - the read honours its context between chunks, so a phase's timeout or
//     an interruption also covers reading what the phase wrote.
package safeio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Default limits.
const (
	// DefaultConfigLimit bounds a config file (JSON5): 16 MiB.
	DefaultConfigLimit int64 = 16 << 20
	// DefaultDataLimit bounds a results or telemetry file: 64 MiB.
	DefaultDataLimit int64 = 64 << 20
)

// chunk is how much is read between two looks at the context.
const chunk = 1 << 20

// ErrNotRegular is wrapped by the error for a file that is not a regular
// file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Limit is what a read may take: Bytes (0: the default of its kind), and
// the words for messages.
type Limit struct {
	// Bytes is the most that is read; 0 or less means Default.
	Bytes int64
	// What names the file's role in messages, e.g. "results file".
	What string
	// Hint says how to raise the limit, e.g. "raise it with the global
	// max_results_file_size".
	Hint string
}

// NotRegularError is a file that is not a regular file.
type NotRegularError struct {
	What, File, Kind string
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s %s is %s, not a regular file: bench reads only regular files", e.What, e.File, e.Kind)
}

// Unwrap makes errors.Is(err, ErrNotRegular) true.
func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// TooLargeError is a file over its limit.
type TooLargeError struct {
	What, File, Hint string
	Limit            int64
	// Size is the file's size when it was known before reading (0: found
	// while reading, the file grew or reports no size).
	Size int64
}

func (e *TooLargeError) Error() string {
	size := "larger than"
	if e.Size > 0 {
		size = FormatSize(e.Size) + ", over"
	}
	msg := fmt.Sprintf("%s %s is %s the %s limit", e.What, e.File, size, FormatSize(e.Limit))
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

func (l Limit) what() string {
	if l.What == "" {
		return "file"
	}
	return l.What
}

// kindOf describes a non-regular file mode.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "not a regular file"
}

// Open opens path for reading after checking (through symlinks) that it
// is a regular file, and checks the open file again. It never blocks on a
// FIFO. what names the file's role in errors ("" for "file").
func Open(path, what string) (*os.File, os.FileInfo, error) {
	if what == "" {
		what = "file"
	}
	// A first look before opening: opening some devices has effects (a
	// tape rewinds, a tty becomes the controlling terminal).
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &NotRegularError{What: what, File: path, Kind: kindOf(fi.Mode())}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	// The file may have been replaced between Stat and Open: what counts is
	// what was opened.
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{What: what, File: path, Kind: kindOf(fi.Mode())}
	}
	return f, fi, nil
}

// OpenIn is Open for a name inside root (os.Root: symlinks may not leave
// it).
func OpenIn(root *os.Root, name, what string) (*os.File, os.FileInfo, error) {
	if what == "" {
		what = "file"
	}
	fi, err := root.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, &NotRegularError{What: what, File: name, Kind: kindOf(fi.Mode())}
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{What: what, File: name, Kind: kindOf(fi.Mode())}
	}
	return f, fi, nil
}

// ReadFile reads a regular file whole, up to lim.Bytes (def when 0 or
// less), checking ctx between chunks. Errors name the file; a missing file
// wraps fs.ErrNotExist.
func ReadFile(ctx context.Context, path string, lim Limit, def int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", lim.what(), path, err)
	}
	limit := lim.Bytes
	if limit <= 0 {
		limit = def
	}
	f, fi, err := Open(path, lim.what())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return &TooLargeError{What: lim.what(), File: path, Hint: lim.Hint, Limit: limit, Size: size}
	}
	if fi.Size() > limit {
		return nil, tooLarge(fi.Size())
	}
	size := fi.Size()
	if size <= 0 {
		size = 512
	}
	buf := make([]byte, 0, size+1)
	r := io.LimitReader(f, limit+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s %s: %w", lim.what(), path, err)
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n := min(cap(buf)-len(buf), chunk)
		m, err := r.Read(buf[len(buf) : len(buf)+n])
		buf = buf[:len(buf)+m]
		if int64(len(buf)) > limit {
			return nil, tooLarge(0)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s %s: %w", lim.what(), path, err)
		}
	}
}

// FormatSize writes a byte count for people: "64 MiB", "1.5 GiB", "900 B".
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d %s", int64(v), units[i])
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// ParseSize reads a size limit from a config or command-line value: a
// whole number of bytes (a JSON number or a numeric string) or a string
// with a unit: "64MiB", "512 KiB", "1GB", "2G" (K, M, G, T are binary
// units, as are KiB…; KB, MB, GB, TB are decimal). It must be positive.
func ParseSize(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return positive(int64(x), v)
	case int64:
		return positive(x, v)
	case float64:
		if x != float64(int64(x)) {
			return 0, fmt.Errorf("size %v: want a whole number of bytes", x)
		}
		return positive(int64(x), v)
	case string:
		s := strings.TrimSpace(x)
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		num, unit := s[:i], strings.ToUpper(strings.TrimSpace(s[i:]))
		f, err := strconv.ParseFloat(num, 64)
		if num == "" || err != nil {
			return 0, fmt.Errorf("size %q: want bytes or a number with a unit (KiB, MiB, GiB, KB, MB, GB)", x)
		}
		mult := map[string]float64{"": 1, "B": 1,
			"K": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MIB": 1 << 20, "G": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TIB": 1 << 40,
			"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[unit]
		if mult == 0 {
			return 0, fmt.Errorf("size %q: unknown unit %q (want KiB, MiB, GiB, KB, MB or GB)", x, s[i:])
		}
		b := f * mult
		if b >= 1<<62 {
			return 0, fmt.Errorf("size %q is too large", x)
		}
		return positive(int64(b), v)
	}
	return 0, fmt.Errorf("size %v: want a number of bytes or a string such as \"64MiB\"", v)
}

func positive(n int64, v any) (int64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("size %v: must be more than 0", v)
	}
	return n, nil
}
