package engines_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/engines"
	_ "github.com/benchtune/bench/engines/awsbatch" // the s3:// scheme
	"github.com/benchtune/bench/internal/checkpoint"
	"github.com/benchtune/bench/internal/testenv"
	"github.com/benchtune/bench/trial"
)

// TestStageCheckpoint stages checkpoints through a store on moto (S3): a
// trial gets a fresh directory, its content is uploaded after it
// (whatever its status), a continuation finds it unpacked, a missing
// predecessor gives an empty directory, and a planted malicious archive
// fails the continuation without writing outside its directory.
func TestStageCheckpoint(t *testing.T) {
	endpoint := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"} {
		t.Setenv(k, v)
	}
	var b [5]byte
	_, _ = rand.Read(b[:])
	bucket := "bench-stage-" + hex.EncodeToString(b[:])
	req, _ := http.NewRequest(http.MethodPut, endpoint+"/"+bucket, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("creating bucket %s: %v %v", bucket, resp, err)
	}
	resp.Body.Close()
	ctx := context.Background()
	store := "s3://" + bucket + "/ck"
	spec := func(id int, from string) trial.Spec {
		g := map[string]any{trial.CheckpointStoreKey: store, "experiment_id": "E/1"}
		if from != "" {
			g[trial.ContinueFromKey] = from
		}
		return trial.Spec{ExperimentID: "E/1", TrialID: id, Globals: g}
	}

	// Without a store: nothing to do.
	plain := trial.Spec{ExperimentID: "E", TrialID: 1, Globals: map[string]any{"x": 1}}
	if g, finish, err := engines.StageCheckpoint(ctx, plain); err != nil || finish != nil || g["x"] != 1 || g[trial.CheckpointDirKey] != nil {
		t.Fatalf("no store: %v %v %v", g, finish != nil, err)
	}

	// Trial 1 writes a checkpoint and fails: it is uploaded anyway.
	g, finish, err := engines.StageCheckpoint(ctx, spec(1, ""))
	if err != nil || finish == nil {
		t.Fatal(err)
	}
	dir1, _ := g[trial.CheckpointDirKey].(string)
	if ents, err := os.ReadDir(dir1); err != nil || len(ents) != 0 {
		t.Fatalf("trial 1's directory %q: %v %v, want a fresh empty one", dir1, ents, err)
	}
	if err := os.MkdirAll(filepath.Join(dir1, "opt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir1, "epochs_done"), []byte("9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir1, "opt", "state"), []byte("adam"), 0o644); err != nil {
		t.Fatal(err)
	}
	finish(ctx, &trial.Outcome{Status: trial.FAILED})
	if _, err := os.Stat(dir1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("trial 1's directory is still there: %v", err)
	}
	u1, _ := checkpoint.ObjectURL(store, "E/1", 1)
	if !strings.HasSuffix(u1, "/ck/E%2F1/trial-1.tar.gz") {
		t.Errorf("object %s", u1)
	}
	var buf bytes.Buffer
	if err := engines.DownloadURL(ctx, u1, &buf); err != nil || buf.Len() == 0 {
		t.Fatalf("trial 1's checkpoint in the store: %d bytes, %v", buf.Len(), err)
	}

	// Trial 2 continues trial 1: its fresh directory holds trial 1's files.
	g, finish, err = engines.StageCheckpoint(ctx, spec(2, "1"))
	if err != nil {
		t.Fatal(err)
	}
	dir2, _ := g[trial.CheckpointDirKey].(string)
	if dir2 == dir1 {
		t.Error("the same directory twice")
	}
	for name, want := range map[string]string{"epochs_done": "9\n", "opt/state": "adam"} {
		if got, err := os.ReadFile(filepath.Join(dir2, name)); err != nil || string(got) != want {
			t.Errorf("trial 2's %s: %q %v, want %q", name, got, err, want)
		}
	}
	// It leaves nothing new: an empty directory is not uploaded.
	if err := os.RemoveAll(filepath.Join(dir2, "opt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir2, "epochs_done")); err != nil {
		t.Fatal(err)
	}
	finish(ctx, &trial.Outcome{Status: trial.SUCCEEDED})
	u2, _ := checkpoint.ObjectURL(store, "E/1", 2)
	if err := engines.DownloadURL(ctx, u2, &bytes.Buffer{}); !errors.Is(err, engines.ErrNotFound) {
		t.Errorf("trial 2 left an empty directory, yet: %v", err)
	}

	// Trial 3 continues trial 2, which saved nothing: an empty directory.
	g, finish, err = engines.StageCheckpoint(ctx, spec(3, "2"))
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(g[trial.CheckpointDirKey].(string)); len(ents) != 0 {
		t.Errorf("trial 3's directory holds %v", ents)
	}
	finish(ctx, &trial.Outcome{Status: trial.SUCCEEDED})

	// A planted archive with an entry that climbs out: trial 5, which
	// continues trial 4, fails and nothing lands outside.
	outside := filepath.Join(os.TempDir(), "bench-stage-OUTSIDE-"+hex.EncodeToString(b[:]))
	var evil bytes.Buffer
	gz := gzip.NewWriter(&evil)
	tw := tar.NewWriter(gz)
	rel := "../" + filepath.Base(outside) // beside the fresh directory: outside
	_ = tw.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	_ = gz.Close()
	u4, _ := checkpoint.ObjectURL(store, "E/1", 4)
	if err := engines.WriteURL(ctx, u4, evil.Bytes()); err != nil {
		t.Fatal(err)
	}
	_, finish, err = engines.StageCheckpoint(ctx, spec(5, "4"))
	if !errors.Is(err, checkpoint.ErrUnsafe) || finish != nil {
		t.Errorf("continuing a malicious archive: %v, want an error wrapping ErrUnsafe", err)
	}
	if _, err := os.Lstat(outside); err == nil {
		os.Remove(outside)
		t.Errorf("%s was written", outside)
	}
}
