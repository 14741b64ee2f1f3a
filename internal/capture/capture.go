// Package capture keeps bounded command output: the first and the last
// bytes of what a command prints, with a marker saying how much was
// dropped in between, so that a command printing gigabytes cannot exhaust
// memory while its beginning and its end (where results usually are) stay
// visible.
package capture

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Buffer keeps the first headMax and the last tailMax bytes written to it.
// It is not safe for concurrent use.
type Buffer struct {
	headMax, tailMax int
	head             []byte
	tail             []byte // a ring buffer once it holds tailMax bytes
	tailStart        int    // the oldest byte of a full ring
	total            int64
}

// New returns a buffer keeping headMax + tailMax bytes at most.
func New(headMax, tailMax int) *Buffer {
	return &Buffer{headMax: max(headMax, 0), tailMax: max(tailMax, 0)}
}

// Limit returns a buffer keeping limit bytes: half head, half tail.
func Limit(limit int) *Buffer {
	h := limit / 2
	return New(h, limit-h)
}

// Write keeps what fits; it never fails.
func (c *Buffer) Write(p []byte) (int, error) {
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
	for len(p) > 0 { // full ring: overwrite the oldest bytes
		k := copy(c.tail[c.tailStart:], p)
		p = p[k:]
		c.tailStart = (c.tailStart + k) % c.tailMax
	}
	return n, nil
}

// Total is the number of bytes written.
func (c *Buffer) Total() int64 { return c.total }

// Truncated reports whether bytes were dropped.
func (c *Buffer) Truncated() bool { return c.total > int64(len(c.head)+len(c.tail)) }

// String returns what was kept, with a marker line in place of the
// dropped bytes.
func (c *Buffer) String() string {
	tail := make([]byte, 0, len(c.tail))
	tail = append(tail, c.tail[c.tailStart:]...)
	tail = append(tail, c.tail[:c.tailStart]...)
	if !c.Truncated() {
		return string(c.head) + string(tail)
	}
	return Join(string(c.head), string(tail), c.total-int64(len(c.head)+len(tail)))
}

// Join puts the marker for dropped bytes between a head and a tail,
// trimming a UTF-8 character cut in two at either edge.
func Join(head, tail string, dropped int64) string {
	for k := 0; k < utf8.UTFMax && head != "" && !utf8.ValidString(head[max(0, len(head)-utf8.UTFMax):]); k++ {
		head = head[:len(head)-1]
		dropped++
	}
	for k := 0; k < utf8.UTFMax && tail != "" && !utf8.RuneStart(tail[0]); k++ {
		tail = tail[1:]
		dropped++
	}
	return head + Marker(dropped) + tail
}

// Marker is the line that stands for dropped bytes.
func Marker(dropped int64) string {
	return fmt.Sprintf("\n[bench: %d bytes of output omitted]\n", dropped)
}

var markerRe = regexp.MustCompile(`\n\[bench: [0-9]+ bytes of output omitted\]\n`)

// Markers returns the [start, end) byte spans of the markers in s, in
// order: where bounded output was cut (for redacting a secret cut in two,
// configs.Secrets).
func Markers(s string) [][2]int {
	if !strings.Contains(s, " bytes of output omitted]") {
		return nil
	}
	var out [][2]int
	for _, m := range markerRe.FindAllStringIndex(s, -1) {
		out = append(out, [2]int{m[0], m[1]})
	}
	return out
}

// Bound keeps the head and the tail of s within limit bytes (limit <= 0:
// no limit) and tells whether it cut anything.
func Bound(s string, limit int) (string, bool) {
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	h, t := limit/2, len(s)-(limit-limit/2)
	// Never cut inside the marker of an earlier cut: the text on either
	// side of a marker must stay next to one (a secret cut there is
	// redacted by what is left of it, configs.Secrets).
	for _, m := range Markers(s) {
		if h > m[0] && h < m[1] {
			h = m[0]
		}
		if t > m[0] && t < m[1] {
			t = m[1]
		}
	}
	return Join(s[:h], s[t:], int64(t-h)), true
}
