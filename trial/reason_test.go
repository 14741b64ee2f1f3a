package trial

import (
	"strings"
	"testing"
)

func TestBoundReason(t *testing.T) {
	if got := BoundReason("short"); got != "short" {
		t.Errorf("BoundReason(short) = %q", got)
	}
	long := "head " + strings.Repeat("\x00", 60<<20) + " tail"
	got := BoundReason(long)
	if len(got) > MaxReasonBytes+100 || !strings.HasPrefix(got, "head ") || !strings.HasSuffix(got, " tail") ||
		!strings.Contains(got, "bytes of output omitted") {
		t.Errorf("BoundReason: %d bytes, %.80q...", len(got), got)
	}
}
