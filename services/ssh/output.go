package ssh

import (
	"bytes"
	"io"
)

// Default bounds of the output kept in memory per stream.
const (
	defaultHeadBytes = 1 << 20
	defaultTailBytes = 1 << 20
)

// lineWriter forwards whole lines to w, holding back a partial last line
// until it is completed or Flush is called.
type lineWriter struct {
	w       io.Writer
	pending []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	if l.w == nil {
		return len(p), nil
	}
	l.pending = append(l.pending, p...)
	if i := bytes.LastIndexByte(l.pending, '\n'); i >= 0 {
		_, err := l.w.Write(l.pending[:i+1])
		l.pending = append(l.pending[:0], l.pending[i+1:]...)
		if err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes a held-back partial line.
func (l *lineWriter) Flush() error {
	if l.w == nil || len(l.pending) == 0 {
		return nil
	}
	_, err := l.w.Write(l.pending)
	l.pending = l.pending[:0]
	return err
}
