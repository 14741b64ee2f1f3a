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
