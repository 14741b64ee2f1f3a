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
