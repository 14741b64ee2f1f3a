package configs

import (
	"io/fs"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/tunables"
)

// TestConfigHashIsMlosBench: the hash bench stores for a configuration
// (config.config_hash) is mlos_bench's: the SHA-256 of str(TunableGroups).
// The expected value was computed with mlos_bench's own TunableGroups (MLOS
// 549a69a) over the tunables of its mock_env.jsonc, at their defaults, so
// that in a database both write, a configuration has one config row.
func TestConfigHashIsMlosBench(t *testing.T) {
	var all *tunables.Groups
	for _, p := range []string{
		"environments/apps/redis/redis-tunables.jsonc",
		"environments/os/linux/runtime/linux-runtime-tunables.jsonc",
		"environments/os/linux/boot/linux-boot-tunables.jsonc",
		"environments/vm/azure/azure-vm-tunables.jsonc",
	} {
		data, err := fs.ReadFile(Builtin(), p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := source.Parse(p, data)
		if err != nil {
			t.Fatal(err)
		}
		g, err := tunables.ParseParams(doc.At())
		if err != nil {
			t.Fatal(err)
		}
		if all == nil {
			all = g
		} else if err := all.Merge(g); err != nil {
			t.Fatal(err)
		}
	}
	const want = "40e8479b36b108951e246e31e8a71c497c7c8a4cc1cfb6f46b493b4332351219"
	if got := all.Hash(); got != want {
		t.Errorf("config hash %s, want mlos_bench's %s; str(tunables):\n%s", got, want, all)
	}
}

// TestConfigHashIsMlosBenchValues: the same with floats, ranges and
// assigned values (expected values from mlos_bench's TunableGroups).
func TestConfigHashIsMlosBenchValues(t *testing.T) {
	doc, err := source.Parse("t.jsonc", []byte(`{"g": {"cost": 2, "params": {"f": {"type": "float", "range": [0, 1], "default": 0.25}, "i": {"type": "int", "range": [1, 10], "default": 3}, "c": {"type": "categorical", "values": ["a", "b"], "default": "a"}}},
		"h": {"cost": 1, "params": {"x": {"type": "float", "range": [-1e6, 1e6], "default": 1e-7}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	g, err := tunables.ParseParams(doc.At())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Assign(map[string]any{"f": 0.1, "x": 123456.789, "c": "b"}); err != nil {
		t.Fatal(err)
	}
	const str = "{ g::c[categorical](['a', 'b']:a)=b, g::f[float]((0, 1):0.25)=0.1, g::i[int]((1, 10):3)=3, h::x[float]((-1000000.0, 1000000.0):1e-07)=123456.789 }"
	if g.String() != str {
		t.Errorf("str(tunables):\n%s\nmlos_bench's:\n%s", g, str)
	}
	if got, want := g.Hash(), "923bccc6c62142fdc30716ab9b2e16c73a7c7bd2f4098c0027ee1a30cc2ef586"; got != want {
		t.Errorf("config hash %s, want mlos_bench's %s", got, want)
	}
}
