package schedulers

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/trial"
)

// TestDecodeCheckpointStore: fidelity.checkpoint_store is an s3:// URL,
// for promotion "continue" only; bad values are refused at the key, with
// the file, line, column and JSON path.
func TestDecodeCheckpointStore(t *testing.T) {
	base := map[string]any{"param": "d", "min": int64(1), "max": int64(9), "promotion": "continue"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	got, err := DecodeConfig("", map[string]any{"fidelity": with("checkpoint_store", "s3://my-bucket/ckpt/")}, nil, source.Ref{}, "e", false)
	if err != nil || got.Fidelity.CheckpointStore != "s3://my-bucket/ckpt" {
		t.Errorf("good store: %+v %v", got.Fidelity, err)
	}
	got, err = DecodeConfig("", map[string]any{"fidelity": `{"param": "d", "min": 1, "max": 9, "promotion": "continue", "checkpoint_store": "s3://b-1"}`},
		nil, source.Ref{}, "e", false)
	if err != nil || got.Fidelity.CheckpointStore != "s3://b-1" {
		t.Errorf("as JSON text: %+v %v", got.Fidelity, err)
	}
	for _, tc := range []struct {
		in  map[string]any
		err string
	}{
		{with("checkpoint_store", "/shared/ckpt"), `/config/fidelity/checkpoint_store: fidelity.checkpoint_store: want s3://bucket or s3://bucket/prefix, got "/shared/ckpt"`},
		{with("checkpoint_store", int64(3)), "/config/fidelity/checkpoint_store: fidelity.checkpoint_store must be an s3://bucket/prefix URL (a string), got 3"},
		{with("checkpoint_store", "s3://Bucket/x"), "/config/fidelity/checkpoint_store: fidelity.checkpoint_store: want s3://bucket/prefix with an S3 bucket name"},
		{with("checkpoint_store", "s3://bucket/a/../b"), `fidelity.checkpoint_store: the prefix of "s3://bucket/a/../b" has an empty, "." or ".." segment`},
		{with("checkpoint_store", "s3://bucket/x", "promotion", "rerun"), `/config/fidelity/checkpoint_store: fidelity.checkpoint_store is used by "promotion": "continue" only (promotion is "rerun")`},
		{with("checkpoint_stor", "s3://bucket/x"), `unknown key "checkpoint_stor" (did you mean "checkpoint_store"?)`},
	} {
		_, err := DecodeConfig("", map[string]any{"fidelity": tc.in}, nil, source.Ref{}, "e", false)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want %q", tc.in, err, tc.err)
		}
	}
	// A URL with credentials in it is refused without repeating them.
	_, err = DecodeConfig("", map[string]any{"fidelity": with("checkpoint_store", "s3://AKIA:hunter2@bucket/x")}, nil, source.Ref{}, "e", false)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("credentials: %v", err)
	}
	// In a file: the error has its file, line and column.
	doc, err := source.Parse("sched.jsonc", []byte(`{"class": "bench.schedulers.ParallelScheduler", "config": {
  "fidelity": {"param": "d", "min": 1, "max": 9, "promotion": "continue",
    "checkpoint_store": "gs://bucket"}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	cfgObj, _ := doc.Root.Get("config").Value().(map[string]any)
	_, err = DecodeConfig("", cfgObj, nil, doc.At(), "e", false)
	if err == nil || !strings.Contains(err.Error(), "sched.jsonc:3:") || !strings.Contains(err.Error(), "/config/fidelity/checkpoint_store") {
		t.Errorf("in a file: %v", err)
	}
}

// TestFidelityContinueStore: with a checkpoint store, each trial's
// metadata names the store (not a driver folder, which is not made) and a
// promoted trial the trial it continues.
func TestFidelityContinueStore(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "db.sqlite"))
	dir := t.TempDir()
	fs := newFid(t, st, map[string]any{"param": "budget", "min": int64(1), "max": int64(9), "brackets": int64(1),
		"promotion": "continue", "checkpoint_dir": dir, "checkpoint_store": "s3://bkt/ckpt"}, nil, 1, randomOpt(t, 9), nil)
	if err := fs.s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	promoted := 0
	for _, sp := range *fs.runs {
		if sp.Globals[trial.CheckpointStoreKey] != "s3://bkt/ckpt" {
			t.Errorf("trial %d: store %v", sp.TrialID, sp.Globals[trial.CheckpointStoreKey])
		}
		if d, ok := sp.Globals[trial.CheckpointDirKey]; ok {
			t.Errorf("trial %d: a driver checkpoint dir %v", sp.TrialID, d)
		}
		if _, ok := sp.Globals[trial.ContinueFromKey]; ok {
			promoted++
		}
	}
	if promoted == 0 {
		t.Error("no promotion continued")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the driver made checkpoint folders: %v", ents)
	}
}
