package reaper

import (
	"os"
	"syscall"
)

// readSmall reads a whole /proc file, as os.ReadFile does, with fewer
// system calls: a sweep reads two files of every process of the user
// (about 300 reads per sweep on a machine where bench runs as root), and
// for each os.ReadFile also asks the runtime's poller to watch the file
// (epoll_ctl, which the kernel refuses for a /proc file), asks its size
// (fstat, which /proc reports as 0) and sets up an *os.File with a
// cleanup. Errors are *os.PathError with the system's errno, as
// os.ReadFile's (gone() and fs.ErrNotExist see through them).
func readSmall(path string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 4096) // a stat line, most environments
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
