package kubernetes

import (
	"testing"

	"github.com/benchtune/bench/engines"
)

// TestProgressCursor: reads of a growing log hand each report on once;
// the Job's next pod starts fresh, its reports after those already handed
// on; the log tail told to a person has no progress lines.
func TestProgressCursor(t *testing.T) {
	var cur progressCursor
	var off int64
	read := func(pod, log string) string {
		b := cur.next(pod, off, engines.ProgressFromLog([]byte(log)))
		off += int64(len(b))
		return string(b)
	}
	m := engines.ProgressLogMarker
	logA := "starting\n" + m + `{"step":0}` + "\n"
	if got := read("uid-a", logA); got != `{"step":0}`+"\n" {
		t.Fatalf("first read = %q", got)
	}
	if got := read("uid-a", logA); got != "" {
		t.Fatalf("the same log again = %q, want nothing", got)
	}
	logA += m + `{"step":1}` + "\n" + m + `{"step":2`
	if got := read("uid-a", logA); got != `{"step":1}`+"\n" {
		t.Fatalf("grown log = %q, want step 1 only (step 2 unfinished)", got)
	}
	// An evicted pod's replacement: its log starts from nothing.
	logB := "starting again\n" + m + `{"step":0}` + "\n"
	if got := read("uid-b", logB); got != `{"step":0}`+"\n" {
		t.Fatalf("new pod's first read = %q", got)
	}
	logB += m + `{"step":1}` + "\n"
	if got := read("uid-b", logB); got != `{"step":1}`+"\n" {
		t.Fatalf("new pod's second read = %q", got)
	}

	if got := withoutProgress("a\n" + m + "{}\nb\n"); got != "a\nb\n" {
		t.Errorf("withoutProgress = %q", got)
	}
}
