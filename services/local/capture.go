package local

import (
	"bytes"
	"github.com/benchtune/bench/internal/capture"
	"io"
	"strings"
	"sync"
)

// boundConcat joins parts and, when the result is longer than limit,
// keeps its first and last limit/2 bytes around a marker.
func boundConcat(parts []string, limit int) (string, bool) {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total <= limit {
		return strings.Join(parts, ""), false
	}
	c := capture.Limit(limit)
	for _, p := range parts {
		_, _ = io.WriteString(c, p)
	}
	return c.String(), true
}

// liveWriter serialises the lines of several streams onto one writer: each
// Write call on the underlying writer is one whole line (or a piece of a
// line longer than maxLiveLine). Write errors disable it silently, since
// live output is a convenience and must never stop a command.
type liveWriter struct {
	mu     sync.Mutex
	w      io.Writer
	failed bool
}

func (l *liveWriter) writeLine(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed {
		return
	}
	if _, err := l.w.Write(p); err != nil {
		l.failed = true
	}
}

// maxLiveLine bounds the bytes held back while waiting for a newline.
const maxLiveLine = 64 << 10

// lineSplitter cuts one stream into lines for a liveWriter.
type lineSplitter struct {
	out     *liveWriter
	pending []byte
}

func (s *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		content := len(p) // bytes of the current line in p, newline excluded
		if i >= 0 {
			content = i
		}
		if room := maxLiveLine - len(s.pending); content > room {
			// Too long: pass a piece on as a line of its own.
			s.pending = append(s.pending, p[:room]...)
			p = p[room:]
			s.pending = append(s.pending, '\n')
			s.flushPending()
			continue
		}
		if i < 0 {
			s.pending = append(s.pending, p...)
			break
		}
		s.pending = append(s.pending, p[:i+1]...)
		p = p[i+1:]
		s.flushPending()
	}
	return n, nil
}

func (s *lineSplitter) flushPending() {
	s.out.writeLine(s.pending)
	s.pending = s.pending[:0]
}

// Close writes a last unterminated line, with a newline added.
func (s *lineSplitter) Close() {
	if len(s.pending) > 0 {
		s.pending = append(s.pending, '\n')
		s.flushPending()
	}
}
