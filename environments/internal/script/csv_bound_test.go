package script

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestHostileResultsFileBounded: a results (or telemetry) file of 60 MB of
// NULs, or of text without a newline, is refused with a short error that
// names the line and byte offset of the problem, without parsing it: the
// error does not grow with the file, and neither does memory (measured as
// the bytes allocated while parsing, which is honest whatever the load).
func TestHostileResultsFileBounded(t *testing.T) {
	nuls := make([]byte, 60<<20)
	long := bytes.Repeat([]byte("a"), 3<<20)
	long = append([]byte("metric,value\nscore,1\n"), long...)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"NULs", nuls, "line 1, byte offset 0: a NUL byte"},
		{"NUL later", append([]byte("metric,value\nscore,1\nx,\x00\n"), nuls[:1000]...), "line 3, byte offset 23: a NUL byte"},
		{"no newline", long, "line 3 (from byte offset 21) is longer than 1048576 bytes (3145728 bytes without a newline)"},
	} {
		for _, parse := range []struct {
			what string
			f    func([]byte) error
		}{
			{"results", func(b []byte) error { _, err := ParseResults(b); return err }},
			{"telemetry", func(b []byte) error { _, err := ParseTelemetry(b, time.UTC); return err }},
		} {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err := parse.f(c.data)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s %s: %v, want %q", c.name, parse.what, err, c.want)
			}
			if n := len(err.Error()); n > 512 {
				t.Errorf("%s %s: a %d-byte error", c.name, parse.what, n)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
				t.Errorf("%s %s: parsing allocated %d bytes", c.name, parse.what, grew)
			}
		}
	}
	// A long header is quoted short.
	hdr := strings.Repeat("x", 100000)
	_, err := ParseResults([]byte(hdr + "\n"))
	if err == nil || len(err.Error()) > 512 || !strings.Contains(err.Error(), "(100000 bytes)") {
		t.Errorf("a header without rows: %d bytes: %.300v", len(err.Error()), err)
	}
	_, err = ParseTelemetry([]byte(hdr+",m,1\n"), time.UTC)
	if err == nil || len(err.Error()) > 512 {
		t.Errorf("a bad timestamp: %d bytes: %.300v", len(err.Error()), err)
	}
}
