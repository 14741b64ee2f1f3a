package composite_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
)

// TestCompositeMeasurements: each LocalEnv child reports its own phases
// under its own name (dots and spaces kept), and the composite merges
// them with the scripts' results; a child with the switch off reports
// none.
func TestCompositeMeasurements(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(`{
		"name": "top", "class": "mlos_bench.environments.CompositeEnv",
		"config": {"children": [
			{"name": "db server", "class": "mlos_bench.environments.LocalEnv",
			 "config": {"setup": ["sleep 0.05"], "run": ["echo 'score,0.5'"], "results_stdout_pattern": "(score),(\\S+)"}},
			{"name": "client.v2", "class": "mlos_bench.environments.LocalEnv",
			 "config": {"run": ["sleep 0.1", "echo 'latency,7'"], "results_stdout_pattern": "(latency),(\\S+)"}},
			{"name": "quiet", "class": "mlos_bench.environments.LocalEnv",
			 "config": {"run": ["true"], "bench_measurements": false}}
		]}
	}`, nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	var names []string
	for k := range res.Metrics {
		if strings.HasSuffix(k, ".wall_s") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	want := []string{"bench.client.v2.run.wall_s", "bench.db server.run.wall_s", "bench.db server.setup.wall_s"}
	if !slices.Equal(names, want) {
		t.Errorf("wall times %v, want %v (results %v)", names, want, slices.Sorted(maps.Keys(res.Metrics)))
	}
	if w, _ := res.Metrics["bench.client.v2.run.wall_s"].(float64); w < 0.09 {
		t.Errorf("client.v2 run wall %v", res.Metrics["bench.client.v2.run.wall_s"])
	}
	if res.Metrics["score"] != 0.5 || res.Metrics["latency"] != int64(7) {
		t.Errorf("the scripts' results are lost: %v", res.Metrics)
	}
	for k := range res.Metrics {
		if strings.HasPrefix(k, "bench.quiet.") {
			t.Errorf("child with bench_measurements false reports %s", k)
		}
	}
}
