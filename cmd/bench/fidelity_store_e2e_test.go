package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/testenv"
)

// Promotion "continue" through a checkpoint store (fidelity
// checkpoint_store, an s3:// URL on moto) on the engines whose jobs share
// no file system with the driver: each trial's bench exec-trial unpacks
// the checkpoint of the trial it continues into a fresh local directory
// and uploads its own after the run.

// fidelityStore is the example's fidelity with promotion "continue"
// through store.
func fidelityStore(store string) string {
	b, _ := json.Marshal(map[string]any{"param": "epochs", "min": 1, "max": 27, "eta": 3, "promotion": "continue",
		"checkpoint_store": store})
	return string(b)
}

// makeBucket creates a bucket on the moto server at endpoint.
func makeBucket(t *testing.T, endpoint, bucket string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, endpoint+"/"+bucket, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("creating bucket %s: %s", bucket, resp.Status)
	}
}

// listObjects lists the keys under prefix in a moto bucket.
func listObjects(t *testing.T, endpoint, bucket, prefix string) string {
	t.Helper()
	resp, err := http.Get(endpoint + "/" + bucket + "?prefix=" + prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// runContinueThroughStore runs configs/examples/multi-fidelity in dir on
// its engine.jsonc with promotion "continue" through s3://bucket/ckpt and
// checks that every promoted trial resumed from the checkpoint its
// configuration's trial at the rung below wrote (it trained only the
// epochs the new rung adds, which train.sh can know only from that
// checkpoint: the trial's checkpoint directory is a fresh one on the far
// side, and the driver keeps none), and that every trial left its
// checkpoint in the store.
func runContinueThroughStore(t *testing.T, dir, exp, endpoint, bucket string, configs int) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	r := runBench(t, dir, fidelityArgs(root, "--max_suggestions", strconv.Itoa(configs), "--engine", "engine.jsonc",
		"--experiment_id", exp, "--fidelity", fidelityStore("s3://"+bucket+"/ckpt"))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, "cannot work with the") || strings.Contains(r.stderr, "every host must see") {
		t.Errorf("with a checkpoint store, continue is still refused or warned about:\n%s", r.stderr)
	}
	checkContinuedThroughStore(t, dir, exp, endpoint, bucket, configs)
}

// checkContinuedThroughStore checks the stored experiment exp of a run
// with promotion "continue" through s3://bucket/ckpt (see
// runContinueThroughStore).
func checkContinuedThroughStore(t *testing.T, dir, exp, endpoint, bucket string, configs int) {
	t.Helper()
	trs := fidelityTrials(t, filepath.Join(dir, "bench.sqlite"), exp)
	checkFidelityRun(t, trs, configs)
	continued := 0
	for _, ft := range trs {
		epochs, _ := strconv.Atoi(ft.fidelity)
		if ft.rung == ft.bracket {
			if ft.continueFrom != "" || ft.epochsTrained != epochs {
				t.Errorf("first run %d at %d epochs trained %d (continues %q)", ft.id, epochs, ft.epochsTrained, ft.continueFrom)
			}
			continue
		}
		from, _ := strconv.Atoi(ft.continueFrom)
		prev := trs[from]
		if prev == nil || prev.config != ft.config || prev.rung != ft.rung-1 {
			t.Errorf("promoted trial %d (configuration %d, rung %d) continues %q: not its configuration's trial at the rung below", ft.id, ft.config, ft.rung, ft.continueFrom)
			continue
		}
		prevEpochs, _ := strconv.Atoi(prev.fidelity)
		if ft.epochsTrained != epochs-prevEpochs {
			t.Errorf("promoted trial %d at %d epochs continues trial %d (%d epochs) but trained %d epochs, want %d: it did not resume from the checkpoint",
				ft.id, epochs, from, prevEpochs, ft.epochsTrained, epochs-prevEpochs)
		}
		continued++
	}
	if continued == 0 {
		t.Error("no trial continued")
	}
	objs := listObjects(t, endpoint, bucket, "ckpt/"+exp+"/")
	for id := range trs {
		if !strings.Contains(objs, fmt.Sprintf("<Key>ckpt/%s/trial-%d.tar.gz</Key>", exp, id)) {
			t.Errorf("no checkpoint of trial %d in the store:\n%s", id, objs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bench-checkpoints", exp)); err == nil {
		t.Errorf("the driver made a checkpoint folder: the store was not used alone")
	}
}

// TestFidelityStoreNetworkWorkers: promotion "continue" through a
// checkpoint store (moto's S3) with trials run by the driver's own runner
// and by two network workers (bench worker --connect): a configuration's
// rungs may run on any of them, and each promotion resumes from the
// checkpoint its predecessor uploaded, wherever that ran.
func TestFidelityStoreNetworkWorkers(t *testing.T) {
	endpoint := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
		"AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"} {
		t.Setenv(k, v)
	}
	dir, tmp := t.TempDir(), t.TempDir()
	bucket := "bench-mf-net-" + strconv.FormatInt(int64(os.Getpid()), 36)
	makeBucket(t, endpoint, bucket)
	root, _ := filepath.Abs("../..")
	addr := freePort(t)
	write(t, dir, "token", "tok-fidelity-store-secret\n", 0o600)
	fid := fidelityStore("s3://" + bucket + "/ckpt")
	driver := startBench(t, dir, tmp, "driver", append([]string{"run"}, fidelityArgs(root, "--max_suggestions", "12",
		"--experiment_id", "MFNET", "--fidelity", fid, "--num_trial_runners", "1",
		"--serve", addr, "--token-file", "token", "--log_level", "INFO")...)...)
	waitFor(t, "the server", func() bool { return strings.Contains(readLog(tmp, "driver"), "serving experiment MFNET") })
	wargs := append([]string{"worker", "--connect", "http://" + addr, "--token-file", "token"},
		fidelityArgs(root, "--fidelity", fid, "--log_level", "INFO")...)
	w1 := startBench(t, dir, tmp, "w1", wargs...)
	w2 := startBench(t, dir, tmp, "w2", wargs...)
	waitOK(t, driver, tmp, "driver")
	waitOK(t, w1, tmp, "w1")
	waitOK(t, w2, tmp, "w2")
	checkContinuedThroughStore(t, dir, "MFNET", endpoint, bucket, 12)
	for _, w := range []string{"w1", "w2"} {
		if !strings.Contains(readLog(tmp, w), "trial finished") {
			t.Errorf("%s ran no trial:\n%s", w, readLog(tmp, w))
		}
	}
	if strings.Contains(readLog(tmp, "driver")+readLog(tmp, "w1")+readLog(tmp, "w2"), "tok-fidelity-store-secret") {
		t.Error("the token is in a log")
	}
}
