package local

import (
	"bytes"
	"github.com/benchtune/bench/internal/capture"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCapture(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{"empty", 10, nil, "", false},
		{"fits", 10, []string{"abc", "def"}, "abcdef", false},
		{"exactly", 10, []string{"0123456789"}, "0123456789", false},
		{"one big write", 10, []string{"0123456789abcdef"}, "01234" + capture.Marker(6) + "bcdef", true},
		{"many small writes", 6, []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}, "abc" + capture.Marker(3) + "ghi", true},
		{"ring wraps", 4, []string{"ab", "cde", "fg", "h", "ijk"}, "ab" + capture.Marker(7) + "jk", true},
		{"odd limit", 5, []string{"abcdefgh"}, "ab" + capture.Marker(3) + "fgh", true},
		{"utf8 edges", 8, []string{"ab€€€€cd"}, "ab" + capture.Marker(12) + "cd", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := capture.Limit(tc.limit)
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if diff := cmp.Diff(tc.want, c.String()); diff != "" {
				t.Errorf("String (-want +got):\n%s", diff)
			}
			if c.Truncated() != tc.truncated {
				t.Errorf("truncated = %t, want %t", c.Truncated(), tc.truncated)
			}
		})
	}
}

func TestBoundConcat(t *testing.T) {
	got, trunc := boundConcat([]string{"abc", "def"}, 10)
	if got != "abcdef" || trunc {
		t.Errorf("boundConcat short = %q, %t", got, trunc)
	}
	got, trunc = boundConcat([]string{"aaaa", "bbbb", "cccc"}, 6)
	if want := "aaa" + capture.Marker(6) + "ccc"; got != want || !trunc {
		t.Errorf("boundConcat long = %q, %t; want %q", got, trunc, want)
	}
}

func TestLineSplitter(t *testing.T) {
	var buf bytes.Buffer
	var calls []string
	lw := &liveWriter{w: writerFunc(func(p []byte) (int, error) {
		calls = append(calls, string(p))
		return buf.Write(p)
	})}
	s := &lineSplitter{out: lw}
	for _, w := range []string{"hel", "lo\nwor", "ld\n\nlast"} {
		if _, err := s.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if diff := cmp.Diff([]string{"hello\n", "world\n", "\n", "last\n"}, calls); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}

	// A line longer than maxLiveLine is cut into pieces.
	calls = nil
	long := strings.Repeat("x", maxLiveLine+10)
	_, _ = s.Write([]byte(long + "\n"))
	s.Close()
	if len(calls) != 2 || len(calls[0]) != maxLiveLine+1 || calls[1] != strings.Repeat("x", 10)+"\n" {
		t.Errorf("long line split into %d writes", len(calls))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
