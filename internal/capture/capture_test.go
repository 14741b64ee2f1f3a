package capture

import (
	"strings"
	"testing"
)

func TestBufferKeepsHeadAndTail(t *testing.T) {
	c := New(4, 4)
	for _, s := range []string{"ab", "cdefgh", "ijk", "lm"} {
		c.Write([]byte(s))
	}
	if !c.Truncated() || c.Total() != 13 {
		t.Fatalf("truncated %v total %d", c.Truncated(), c.Total())
	}
	if got, want := c.String(), "abcd"+Marker(5)+"jklm"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	small := Limit(100)
	small.Write([]byte("hello"))
	if small.String() != "hello" || small.Truncated() {
		t.Errorf("small: %q", small.String())
	}
}

func TestHugeOutputStaysBounded(t *testing.T) {
	c := Limit(1024)
	chunk := []byte(strings.Repeat("x", 4096))
	for i := 0; i < 25000; i++ { // 100 MB
		c.Write(chunk)
	}
	if len(c.String()) > 1024+100 {
		t.Errorf("kept %d bytes", len(c.String()))
	}
}

func TestBoundUTF8(t *testing.T) {
	s := strings.Repeat("é", 50) // 2 bytes each
	got, cut := Bound(s, 11)
	if !cut || !strings.Contains(got, "bytes of output omitted") {
		t.Fatalf("%q", got)
	}
	for _, part := range strings.Split(got, "\n") {
		if strings.ContainsRune(part, '\uFFFD') {
			t.Errorf("broken character in %q", got)
		}
	}
	if got, cut := Bound("short", 0); got != "short" || cut {
		t.Error("no limit")
	}
}

// TestBoundKeepsMarkersWhole: bounding output that was cut before never
// cuts inside the earlier marker.
func TestBoundKeepsMarkersWhole(t *testing.T) {
	c := Limit(1024)
	_, _ = c.Write([]byte(strings.Repeat("h", 600) + strings.Repeat("t", 3000)))
	once := c.String()
	for limit := 1000; limit <= len(once); limit++ {
		got, _ := Bound(once, limit)
		rest := got
		for _, m := range Markers(got) {
			rest = strings.Replace(rest, got[m[0]:m[1]], "", 1)
		}
		if strings.Trim(rest, "ht") != "" {
			t.Fatalf("limit %d: a marker was cut: %q", limit, got)
		}
	}
}
