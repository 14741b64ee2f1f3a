package ssh

import (
	"bytes"
	"fmt"
	"io"
)

// Default bounds of the output kept in memory per stream.
const (
	defaultHeadBytes = 1 << 20
	defaultTailBytes = 1 << 20
)

// capture keeps the first head bytes and the last tail bytes written to it,
// so a command that prints gigabytes does not exhaust memory.
type capture struct {
	headMax, tailMax int
	head             []byte
	tail             []byte // ring buffer once full
	tailStart        int    // index of the oldest byte in tail when full
	total            int64
}

func newCapture(headMax, tailMax int) *capture {
	return &capture{headMax: headMax, tailMax: tailMax}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || c.tailMax <= 0 {
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
	for len(p) > 0 { // full ring: overwrite the oldest bytes
		k := copy(c.tail[c.tailStart:], p)
		p = p[k:]
		c.tailStart = (c.tailStart + k) % c.tailMax
	}
	return n, nil
}

// Truncated reports whether bytes were dropped between head and tail.
func (c *capture) Truncated() bool {
	return c.total > int64(len(c.head)+len(c.tail))
}

// String returns the kept output; when bytes were dropped a marker line
// saying how many replaces them.
func (c *capture) String() string {
	var b bytes.Buffer
	b.Write(c.head)
	if dropped := c.total - int64(len(c.head)+len(c.tail)); dropped > 0 {
		fmt.Fprintf(&b, "\n[... %d bytes of output omitted ...]\n", dropped)
	}
	b.Write(c.tail[c.tailStart:])
	b.Write(c.tail[:c.tailStart])
	return b.String()
}

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
