package local

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// capture keeps the first half and the last half of at most limit bytes
// written to it; the bytes in between are counted and dropped, so memory
// stays bounded whatever a command prints. It is not safe for concurrent
// use.
type capture struct {
	headMax, tailMax int
	head             []byte
	tail             []byte // a ring buffer once it holds tailMax bytes
	tailStart        int    // the oldest byte of a full ring
	total            int64
}

func newCapture(limit int) *capture {
	h := limit / 2
	return &capture{headMax: h, tailMax: limit - h}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailMax == 0 {
		return n, nil
	}
	if len(p) >= c.tailMax {
		c.tail = append(c.tail[:0], p[len(p)-c.tailMax:]...)
		c.tailStart = 0
		return n, nil
	}
	if room := c.tailMax - len(c.tail); room > 0 {
		k := min(room, len(p))
		c.tail = append(c.tail, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(c.tail[c.tailStart:], p)
		p = p[k:]
		c.tailStart = (c.tailStart + k) % c.tailMax
	}
	return n, nil
}

// truncated reports whether bytes were dropped.
func (c *capture) truncated() bool { return c.total > int64(len(c.head)+len(c.tail)) }

// String returns what was kept, with a marker line in place of the
// dropped bytes.
func (c *capture) String() string {
	tail := make([]byte, 0, len(c.tail))
	tail = append(tail, c.tail[c.tailStart:]...)
	tail = append(tail, c.tail[:c.tailStart]...)
	if !c.truncated() {
		return string(c.head) + string(tail)
	}
	return joinTruncated(string(c.head), string(tail), c.total-int64(len(c.head)+len(tail)))
}

// joinTruncated puts the marker between a head and a tail, trimming a
// UTF-8 character cut in two at either edge.
func joinTruncated(head, tail string, dropped int64) string {
	for k := 0; k < utf8.UTFMax && head != "" && !utf8.ValidString(head[max(0, len(head)-utf8.UTFMax):]); k++ {
		head = head[:len(head)-1]
		dropped++
	}
	for k := 0; k < utf8.UTFMax && tail != "" && !utf8.RuneStart(tail[0]); k++ {
		tail = tail[1:]
		dropped++
	}
	return head + truncMarker(dropped) + tail
}

func truncMarker(dropped int64) string {
	return fmt.Sprintf("\n[bench: %d bytes of output omitted]\n", dropped)
}

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
	c := newCapture(limit)
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
