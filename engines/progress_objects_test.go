package engines

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchtune/bench/trial"
)

func TestProgressObjectNames(t *testing.T) {
	if got := ProgressPrefix("s3://b/x/j.1.ab.outcome.json"); got != "s3://b/x/j.1.ab.outcome.json.progress/" {
		t.Errorf("ProgressPrefix = %q", got)
	}
	for _, o := range []string{"", "/tmp/x.outcome.json", "env:X", "configmap://ns/pod-outcome"} {
		if got := ProgressPrefix(o); got != "" {
			t.Errorf("ProgressPrefix(%q) = %q, want none", o, got)
		}
	}
	for _, seq := range []int{1, 2, 99999999} {
		if n, ok := ProgressObjectSeq(ProgressObjectName(seq)); !ok || n != seq {
			t.Errorf("seq %d: name %q gives %d, %v", seq, ProgressObjectName(seq), n, ok)
		}
	}
	for _, bad := range []string{"00000000.jsonl", "1.jsonl", "0000000a.jsonl", "00000001.json", "-0000001.jsonl", "+0000001.jsonl"} {
		if _, ok := ProgressObjectSeq(bad); ok {
			t.Errorf("ProgressObjectSeq(%q): taken", bad)
		}
	}
	if NewObjectProgressWriter("/tmp/x.outcome.json", 0) != nil {
		t.Error("a writer of objects for a local outcome")
	}
}

// TestObjectProgressWriterRetries: a failed write keeps its reports for
// the next object, so the sequence has no gap and loses nothing.
func TestObjectProgressWriterRetries(t *testing.T) {
	var (
		mu      sync.Mutex
		objects = map[string]string{}
		fails   = 2
	)
	w := NewObjectProgressWriter("s3://b/j.outcome.json", time.Millisecond)
	w.mu.Lock()
	w.write = func(_ context.Context, u string, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			return errors.New("unavailable")
		}
		if _, dup := objects[u]; dup {
			t.Errorf("%s written twice", u)
		}
		objects[u] = string(data)
		return nil
	}
	w.mu.Unlock()
	for i := range 3 {
		w.Add(trial.Progress{Step: int64(i), Values: map[string]any{"loss": 1.0}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Add(trial.Progress{Step: 9, Values: map[string]any{"loss": 1.0}}) // after Close: dropped
	mu.Lock()
	defer mu.Unlock()
	var all strings.Builder
	for seq := 1; seq <= len(objects); seq++ {
		data, ok := objects["s3://b/j.outcome.json.progress/"+ProgressObjectName(seq)]
		if !ok {
			t.Fatalf("object %d missing of %v", seq, objects)
		}
		all.WriteString(data)
	}
	if n := strings.Count(all.String(), "\n"); n != 3 || !strings.Contains(all.String(), `"step":2`) {
		t.Fatalf("objects hold %d reports: %q", n, all.String())
	}
}
