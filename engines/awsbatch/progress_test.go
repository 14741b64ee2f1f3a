package awsbatch

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/trial"
)

// TestReadProgressObjects: ReadProgress reads the progress objects beside
// a job's outcome as one stream: from an offset (inside an object too),
// in sequence order, up to the first gap, each byte once; other keys
// under the prefix are no progress.
func TestReadProgressObjects(t *testing.T) {
	f, _ := startMoto(t)
	e, _ := newTestEngine(t, engineConfig(f, nil), 1)
	outcome := e.s3URL("progress-unit." + token() + ".outcome.json")
	rr, _ := json.Marshal(ref{JobID: "job-1", OutcomeURL: outcome})
	read := func(off int64) string {
		t.Helper()
		b, err := e.ReadProgress(t.Context(), rr, off)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(0); got != "" {
		t.Fatalf("no objects yet: %q", got)
	}
	put := func(seq int, data string) {
		t.Helper()
		if err := e.s3.Write(t.Context(), engines.ProgressPrefix(outcome)+engines.ProgressObjectName(seq), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	obj1, obj2, obj3, obj4 := "a1\na2\n", "b1\n", "c1\nc2\n", "d1\n"
	put(1, obj1)
	put(2, obj2)
	put(4, obj4) // 3 is not there yet: 4 waits for it
	if err := e.s3.Write(t.Context(), engines.ProgressPrefix(outcome)+"notes.txt", []byte("not progress\n")); err != nil {
		t.Fatal(err)
	}
	if err := e.s3.Write(t.Context(), engines.ProgressPrefix(outcome)+"sub/00000003.jsonl", []byte("nested\n")); err != nil {
		t.Fatal(err)
	}
	if got := read(0); got != obj1+obj2 {
		t.Fatalf("read(0) = %q, want %q", got, obj1+obj2)
	}
	if got := read(3); got != "a2\n"+obj2 {
		t.Fatalf("read(3) = %q, want from inside the first object", got)
	}
	end := int64(len(obj1 + obj2))
	if got := read(end); got != "" {
		t.Fatalf("read(end) = %q, want nothing new", got)
	}
	put(3, obj3)
	if got := read(end); got != obj3+obj4 {
		t.Fatalf("read after the gap filled = %q, want %q", got, obj3+obj4)
	}
	if got := read(end + int64(len(obj3+obj4))); got != "" {
		t.Fatalf("read at the end = %q", got)
	}
	// Another job's outcome key shares no objects.
	other, _ := json.Marshal(ref{JobID: "job-2", OutcomeURL: e.s3URL("progress-unit." + token() + ".outcome.json")})
	if b, err := e.ReadProgress(t.Context(), other, 0); err != nil || len(b) != 0 {
		t.Fatalf("another job's progress: %q, %v", b, err)
	}
}

// TestProgressObjectsRoundTrip: what exec-trial's ObjectProgressWriter
// writes through the registered s3 scheme, ReadProgress reads back, every
// report once and in order, also when read while it is being written.
func TestProgressObjectsRoundTrip(t *testing.T) {
	f, _ := startMoto(t)
	t.Setenv("AWS_ENDPOINT_URL", f.Endpoint)
	e, _ := newTestEngine(t, engineConfig(f, nil), 1)
	outcome := e.s3URL("progress-rt." + token() + ".outcome.json")
	rr, _ := json.Marshal(ref{JobID: "job-rt", OutcomeURL: outcome})
	w := engines.NewObjectProgressWriter(outcome, 20*time.Millisecond)
	if w == nil {
		t.Fatal("no writer for an s3:// outcome")
	}
	var stream []byte
	readNew := func() {
		t.Helper()
		b, err := e.ReadProgress(t.Context(), rr, int64(len(stream)))
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, b...)
	}
	ts := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	const n = 25
	for i := range n {
		w.Add(trial.Progress{Step: int64(i), Ts: ts.Add(time.Duration(i) * time.Second), Values: map[string]any{"loss": float64(n - i)}})
		if i%5 == 4 {
			readNew()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	readNew()
	lines := strings.Split(strings.TrimSuffix(string(stream), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines read back, want %d:\n%s", len(lines), n, stream)
	}
	for i, l := range lines {
		var p trial.Progress
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if p.Step != int64(i) || !p.Ts.Equal(ts.Add(time.Duration(i)*time.Second)) || p.Values["loss"] != float64(n-i) {
			t.Fatalf("line %d = %+v", i+1, p)
		}
	}
	// Batched: fewer objects than reports (the interval), at least one.
	bucket, key, _ := parseS3URL(strings.TrimSuffix(engines.ProgressPrefix(outcome), "/"))
	objs, err := e.s3.listProgress(t.Context(), bucket, key+"/")
	if err != nil || len(objs) == 0 || len(objs) > n {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	if !bytes.HasSuffix(stream, []byte("\n")) {
		t.Error("the stream does not end with a whole line")
	}
	// Through the registered s3 scheme (what another engine with s3://
	// outcomes uses): the same stream.
	if b, err := engines.ReadProgressObjects(t.Context(), outcome, 0); err != nil || !bytes.Equal(b, stream) {
		t.Fatalf("engines.ReadProgressObjects = %q, %v; want %q", b, err, stream)
	}
	if b, err := engines.ReadProgressObjects(t.Context(), outcome, int64(len(stream))); err != nil || len(b) != 0 {
		t.Fatalf("engines.ReadProgressObjects at the end = %q, %v", b, err)
	}
}
