package tunables

import (
	"encoding/json"
	"github.com/benchtune/bench/internal/pyfmt"
	"github.com/benchtune/bench/internal/testenv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
)

// mlosFixture is the tunable set of mlos_bench's test fixtures
// (mlos_bench/tests/tunable_groups_fixtures.py).
const mlosFixture = `{
    "provision": {
        "cost": 1000,
        "params": {
            "vmSize": {
                "description": "Azure VM size",
                "type": "categorical",
                "default": "Standard_B4ms",
                "values": ["Standard_B2s", "Standard_B2ms", "Standard_B4ms"]
            }
        }
    },
    "boot": {
        "cost": 300,
        "params": {
            "idle": {
                "description": "Idling method",
                "type": "categorical",
                "default": "halt",
                "values": ["halt", "mwait", "noidle"],
                "values_weights": [33, 33, 33]
            }
        }
    },
    "kernel": {
        "cost": 1,
        "params": {
            "kernel_sched_migration_cost_ns": {
                "description": "Cost of migrating the thread to another core",
                "type": "int",
                "default": -1,
                "range": [0, 500000],
                "special": [-1, 0],
                "special_weights": [0.25, 0.25],
                "range_weight": 0.5,
                "log": false
            },
            "kernel_sched_latency_ns": {
                "description": "Initial value for the scheduler period",
                "type": "int",
                "default": 2000000,
                "range": [0, 1000000000],
                "quantization_bins": 11,
                "log": false
            }
        }
    }
}`

func mustParse(t *testing.T, text string) *Groups {
	t.Helper()
	g, err := parseText(t, text)
	if err != nil {
		t.Fatalf("ParseParams: %v", err)
	}
	return g
}

// The canonical text below was derived by hand from mlos_bench's
// TunableGroups.__repr__ / Tunable.__repr__ (groups by -cost then name,
// tunables by name, ranges as Python tuples, categories as Python lists of
// str reprs); the hash is hashlib.sha256 of that text.
func TestCanonicalStringAndHash(t *testing.T) {
	g := mustParse(t, mlosFixture)
	want := "{ provision::vmSize[categorical](['Standard_B2s', 'Standard_B2ms', 'Standard_B4ms']:Standard_B4ms)=Standard_B4ms, " +
		"boot::idle[categorical](['halt', 'mwait', 'noidle']:halt)=halt, " +
		"kernel::kernel_sched_latency_ns[int]((0, 1000000000):2000000)=2000000, " +
		"kernel::kernel_sched_migration_cost_ns[int]((0, 500000):-1)=-1 }"
	if got := g.String(); got != want {
		t.Errorf("String()\n got %s\nwant %s", got, want)
	}
	if got, want := g.Hash(), "0592490d26a2f9f0a47464a12c3835258496a6084d60930c25815b85594e592c"; got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}

	// Declaration order does not matter (mlos_bench's tunables_str_test).
	other := mustParse(t, `{
  "kernel": {"cost": 1, "params": {
    "kernel_sched_latency_ns": {"type": "int", "default": 2000000, "range": [0, 1000000000]},
    "kernel_sched_migration_cost_ns": {"type": "int", "default": -1, "range": [0, 500000], "special": [-1]}}},
  "boot": {"cost": 300, "params": {"idle": {"type": "categorical", "default": "halt", "values": ["halt", "mwait", "noidle"]}}},
  "provision": {"cost": 1000, "params": {"vmSize": {"type": "categorical", "default": "Standard_B4ms", "values": ["Standard_B2s", "Standard_B2ms", "Standard_B4ms"]}}}
}`)
	if other.String() != g.String() {
		t.Errorf("order-dependent canonical string:\n%s\n%s", other.String(), g.String())
	}

	// A value change changes the hash.
	if err := g.Assign(map[string]any{"kernel_sched_migration_cost_ns": 40000}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.String(), "kernel::kernel_sched_migration_cost_ns[int]((0, 500000):-1)=40000") {
		t.Errorf("String() after assign: %s", g.String())
	}
	if g.Hash() == other.Hash() {
		t.Error("hash did not change with the value")
	}
}

func TestCanonicalStringPythonFormatting(t *testing.T) {
	g := mustParse(t, `{
  "b": {"cost": 2, "params": {
    "f_int_range": {"type": "float", "range": [0, 1], "default": 0},
    "f_float_range": {"type": "float", "range": [0.0, 1e-5], "default": 1e-5},
    "i_float_range": {"type": "int", "range": [0.0, 10.0], "default": 5.0},
    "big": {"type": "float", "range": [1, 1e20], "default": 1e16},
    "hex": {"type": "int", "range": [0x0, 0xFF], "default": 0x10},
    "c": {"type": "categorical", "values": [true, 1, 1.5, "it's", "a\\b"], "default": true}}},
  "a": {"cost": 2, "params": {"z": {"type": "float", "range": [-1.5, 100], "default": 100}}}
}`)
	want := "{ a::z[float]((-1.5, 100):100.0)=100.0, " +
		"b::big[float]((1, 1e+20):1e+16)=1e+16, " +
		`b::c[categorical](['True', '1', '1.5', "it's", 'a\\b']:True)=True, ` +
		"b::f_float_range[float]((0.0, 1e-05):1e-05)=1e-05, " +
		"b::f_int_range[float]((0, 1):0.0)=0.0, " +
		"b::hex[int]((0, 255):16)=16, " +
		"b::i_float_range[int]((0.0, 10.0):5)=5 }"
	if got := g.String(); got != want {
		t.Errorf("String()\n got %s\nwant %s", got, want)
	}
}

func TestPyFloatRepr(t *testing.T) {
	// Expected values are Python's repr() of the same floats.
	cases := map[float64]string{
		0: "0.0", 1: "1.0", -1: "-1.0", 0.1: "0.1", 1e-05: "1e-05", 0.0001: "0.0001",
		1e16: "1e+16", 1e15: "1000000000000000.0", 123456789012345678: "1.2345678901234568e+17",
		1.5e300: "1.5e+300", 5e-324: "5e-324", 0.30000000000000004: "0.30000000000000004",
		123.456: "123.456", 1.7976931348623157e308: "1.7976931348623157e+308", -2.5e-7: "-2.5e-07",
	}
	for f, want := range cases {
		if got := pyfmt.FloatRepr(f); got != want {
			t.Errorf("pyfmt.FloatRepr(%v) = %s, want %s", f, got, want)
		}
	}
	strs := map[string]string{
		"a": "'a'", "it's": `"it's"`, `say "hi"`: `'say "hi"'`, `both ' and "`: `'both \' and "'`,
		"tab\tnl\n": `'tab\tnl\n'`, "\x00\x7f": `'\x00\x7f'`, "é日本": "'é日本'", "\u00a0": `'\xa0'`,
		"\u200b": `'\u200b'`, "\U0001F600": "'\U0001F600'", "\U000e0001": `'\U000e0001'`,
	}
	for s, want := range strs {
		if got := pyfmt.StrRepr(s); got != want {
			t.Errorf("pyfmt.StrRepr(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestAssignRestoreDefaults(t *testing.T) {
	g := mustParse(t, mlosFixture)
	if !g.IsDefaults() {
		t.Fatal("fresh groups are not at defaults")
	}
	err := g.Assign(map[string]any{
		"vmSize":                         "Standard_B2s",
		"idle":                           "mwait",
		"kernel_sched_migration_cost_ns": int64(0),
		"kernel_sched_latency_ns":        "100000", // strings are converted, as from storage
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"vmSize": "Standard_B2s", "idle": "mwait",
		"kernel_sched_migration_cost_ns": int64(0), "kernel_sched_latency_ns": int64(100000),
	}
	if diff := cmp.Diff(want, g.Values()); diff != "" {
		t.Errorf("Values() (-want +got):\n%s", diff)
	}
	wantText := map[string]string{
		"vmSize": "Standard_B2s", "idle": "mwait",
		"kernel_sched_migration_cost_ns": "0", "kernel_sched_latency_ns": "100000",
	}
	if diff := cmp.Diff(wantText, g.StringValues()); diff != "" {
		t.Errorf("StringValues() (-want +got):\n%s", diff)
	}
	if g.IsDefaults() {
		t.Error("IsDefaults after assigning non-defaults")
	}
	if !g.Get("kernel_sched_migration_cost_ns").IsSpecial() {
		t.Error("0 is a special value")
	}

	// Atomic: one bad value, nothing assigned.
	before := g.Values()
	err = g.Assign(map[string]any{"idle": "halt", "vmSize": "Standard_XXL", "nope": 1})
	if err == nil {
		t.Fatal("bad assignment accepted")
	}
	for _, frag := range []string{`unknown tunable "nope"`, `'Standard_XXL' is not one of the values ['Standard_B2s', 'Standard_B2ms', 'Standard_B4ms']`} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q lacks %q", err, frag)
		}
	}
	if diff := cmp.Diff(before, g.Values()); diff != "" {
		t.Errorf("failed Assign changed values (-before +after):\n%s", diff)
	}

	// An empty map restores the defaults (mlos_bench behaviour).
	if err := g.Assign(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if !g.IsDefaults() {
		t.Errorf("Assign({}) did not restore defaults: %v", g.Values())
	}
	_ = g.Assign(map[string]any{"idle": "noidle"})
	g.RestoreDefaults()
	if !g.IsDefaults() {
		t.Error("RestoreDefaults did not restore defaults")
	}
}

func TestTunableSet(t *testing.T) {
	g := mustParse(t, `{"g": {"cost": 1, "params": {
  "i": {"type": "int", "range": [0, 100], "special": [-1], "default": 10},
  "f": {"type": "float", "range": [0, 1], "default": 0.5},
  "c": {"type": "categorical", "values": ["a", true, 1, 2.5], "default": "a"}
}}}`)
	cases := []struct {
		name    string
		tunable string
		value   any
		want    any
		text    string
		err     string
	}{
		{"int from int", "i", 42, int64(42), "42", ""},
		{"int from int64", "i", int64(7), int64(7), "7", ""},
		{"int from uint8", "i", uint8(9), int64(9), "9", ""},
		{"int from integral float", "i", 5.0, int64(5), "5", ""},
		{"int from string", "i", " 12 ", int64(12), "12", ""},
		{"int from json number", "i", json.Number("13"), int64(13), "13", ""},
		{"int from bool", "i", true, int64(1), "1", ""},
		{"int special", "i", -1, int64(-1), "-1", ""},
		{"int loss of precision", "i", 5.5, nil, "", "loss of precision: 5.5 is not an integer"},
		{"int out of range", "i", 101, nil, "", `tunable "i": 101 is outside the range [0, 100] and not a special value [-1]`},
		{"int from float string", "i", "5.0", nil, "", "cannot convert '5.0' to an int"},
		{"int from NaN", "i", json.Number("NaN"), nil, "", "cannot convert nan to an int"},
		{"int huge", "i", 1e300, nil, "", "is outside the range"},
		{"int nil", "i", nil, nil, "", "a value is required"},
		{"int from slice", "i", []int{1}, nil, "", "cannot use []int as an int value"},
		{"float from int", "f", 1, 1.0, "1.0", ""},
		{"float small", "f", 1e-5, 1e-5, "1e-05", ""},
		{"float from string", "f", "0.25", 0.25, "0.25", ""},
		{"float out of range", "f", 1.5, nil, "", "1.5 is outside the range [0, 1]"},
		{"float NaN", "f", "nan", nil, "", "nan is outside the range"},
		{"float bad string", "f", "abc", nil, "", "cannot convert 'abc' to a float"},
		{"categorical string", "c", "a", "a", "a", ""},
		{"categorical bool", "c", true, "True", "True", ""},
		{"categorical int", "c", 1, "1", "1", ""},
		{"categorical float", "c", 2.5, "2.5", "2.5", ""},
		{"categorical float 1.0 is not 1", "c", 1.0, nil, "", `'1.0' is not one of the values ['a', 'True', '1', '2.5']`},
		{"categorical unknown", "c", "b", nil, "", `'b' is not one of the values`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tu := g.Get(tc.tunable)
			before := tu.Value()
			err := tu.Set(tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Set(%v) error %v, want %q", tc.value, err, tc.err)
				}
				if !strings.Contains(err.Error(), `tunable "`+tc.tunable+`"`) {
					t.Errorf("error %q does not name the tunable", err)
				}
				if tu.Value() != before {
					t.Errorf("failed Set changed the value to %v", tu.Value())
				}
				return
			}
			if err != nil {
				t.Fatalf("Set(%v): %v", tc.value, err)
			}
			if diff := cmp.Diff(tc.want, tu.Value()); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
			if tu.String() != tc.text {
				t.Errorf("String() = %q, want %q", tu.String(), tc.text)
			}
		})
	}
	i := g.Get("i")
	_ = i.Set(30)
	if i.Int() != 30 || i.Float() != 30 || i.IsDefault() || !i.InRange() {
		t.Errorf("accessors: Int %d Float %v IsDefault %v InRange %v", i.Int(), i.Float(), i.IsDefault(), i.InRange())
	}
	_ = i.Set(10)
	if !i.IsDefault() {
		t.Error("IsDefault after setting the default")
	}
}

func TestCovariantGroupCostAndUpdated(t *testing.T) {
	g := mustParse(t, mlosFixture)
	kernel := g.Group("kernel")
	if !kernel.IsUpdated() || kernel.CurrentCost() != 1 {
		t.Errorf("a new group is updated (like mlos_bench): updated %v cost %d", kernel.IsUpdated(), kernel.CurrentCost())
	}
	g.ResetUpdated()
	if g.IsUpdated() || kernel.CurrentCost() != 0 || g.Group("provision").CurrentCost() != 0 {
		t.Error("ResetUpdated left a group updated")
	}
	// Setting the same value is not an update.
	if err := g.Assign(map[string]any{"idle": "halt"}); err != nil {
		t.Fatal(err)
	}
	if g.Group("boot").IsUpdated() {
		t.Error("assigning the current value marked the group updated")
	}
	if err := g.Get("kernel_sched_latency_ns").Set(3000000); err != nil {
		t.Fatal(err)
	}
	if !kernel.IsUpdated() || kernel.CurrentCost() != 1 {
		t.Error("Set did not mark the group updated")
	}
	if g.Group("boot").IsUpdated() || g.Group("provision").IsUpdated() {
		t.Error("other groups became updated")
	}
	kernel.Reset()
	g.RestoreDefaults()
	if !kernel.IsUpdated() {
		t.Error("restoring defaults that changed a value must mark the group updated")
	}
	if g.Group("boot").IsUpdated() {
		t.Error("restoring unchanged defaults marked a group updated")
	}
	if kernel.Len() != 2 || kernel.Get("kernel_sched_latency_ns") == nil || kernel.Tunables()[0].Name() != "kernel_sched_migration_cost_ns" {
		t.Error("group accessors")
	}
	if g.Get("idle").Group() != g.Group("boot") {
		t.Error("Tunable.Group")
	}
}

func TestSubgroupSharesGroups(t *testing.T) {
	g := mustParse(t, mlosFixture)
	sub, err := g.Subgroup([]string{"kernel", "boot"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kernel", "boot"}, sub.GroupNames()); diff != "" {
		t.Errorf("group order (-want +got):\n%s", diff)
	}
	if sub.Get("vmSize") != nil || sub.Len() != 3 {
		t.Error("subgroup holds the wrong tunables")
	}
	// A change through the view is seen in the original and vice versa.
	if err := sub.Assign(map[string]any{"idle": "mwait"}); err != nil {
		t.Fatal(err)
	}
	if got := g.Values()["idle"]; got != "mwait" {
		t.Errorf("original sees idle=%v", got)
	}
	if err := g.Get("kernel_sched_migration_cost_ns").Set(77); err != nil {
		t.Fatal(err)
	}
	if got := sub.Get("kernel_sched_migration_cost_ns").Value(); got != int64(77) {
		t.Errorf("view sees %v", got)
	}
	g.ResetUpdated()
	_ = sub.Assign(map[string]any{"idle": "noidle"})
	if !g.Group("boot").IsUpdated() {
		t.Error("updated flag is not shared")
	}

	_, err = g.Subgroup([]string{"kernel", "nope"})
	if err == nil || !strings.Contains(err.Error(), `unknown covariant group "nope" (known groups: provision, boot, kernel)`) {
		t.Errorf("unknown group error: %v", err)
	}
	if _, err := g.Subgroup([]string{"boot", "boot"}); err == nil {
		t.Error("a group listed twice was accepted")
	}
}

func TestCopyIsDeep(t *testing.T) {
	g := mustParse(t, mlosFixture)
	g.ResetUpdated()
	c := g.Copy()
	if c.String() != g.String() || c.Hash() != g.Hash() {
		t.Fatal("copy differs")
	}
	if err := c.Assign(map[string]any{"idle": "mwait"}); err != nil {
		t.Fatal(err)
	}
	if g.Values()["idle"] != "halt" || g.Group("boot").IsUpdated() {
		t.Error("changing the copy changed the original")
	}
	if !c.Group("boot").IsUpdated() || c.Get("idle").Group() != c.Group("boot") {
		t.Error("copy's group bookkeeping is wrong")
	}
	var empty *Groups
	if empty.Copy().Len() != 0 {
		t.Error("Copy of nil")
	}
}

func TestMerge(t *testing.T) {
	base := func() *Groups { return mustParse(t, mlosFixture) }
	t.Run("disjoint groups are added by reference", func(t *testing.T) {
		g := base()
		other := mustParse(t, `{"extra": {"cost": 5, "params": {"e": {"type": "int", "range": [0, 3], "default": 1}}}}`)
		if err := g.Merge(other); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"provision", "boot", "kernel", "extra"}, g.GroupNames()); diff != "" {
			t.Errorf("groups (-want +got):\n%s", diff)
		}
		_ = other.Assign(map[string]any{"e": 3})
		if g.Values()["e"] != int64(3) {
			t.Error("merged group is not shared")
		}
	})
	t.Run("same group with the same definition", func(t *testing.T) {
		g := base()
		other := base()
		_ = other.Assign(map[string]any{"idle": "mwait"}) // values may differ
		if err := g.Merge(other); err != nil {
			t.Fatal(err)
		}
		if g.Len() != 4 || g.Values()["idle"] != "halt" {
			t.Errorf("merge of equal groups: len %d idle %v", g.Len(), g.Values()["idle"])
		}
	})
	t.Run("descriptions may differ", func(t *testing.T) {
		g := mustParse(t, `{"a": {"cost": 1, "description": "x", "params": {"p": {"type": "int", "range": [0, 3], "default": 1, "description": "one"}}}}`)
		other := mustParse(t, `{"a": {"cost": 1, "params": {"p": {"type": "int", "range": [0, 3], "default": 1}}}}`)
		if err := g.Merge(other); err != nil {
			t.Fatal(err)
		}
	})
	conflicts := []struct {
		name, doc, msg string
	}{
		{"different cost", `{"kernel": {"cost": 2, "params": {"kernel_sched_migration_cost_ns": {"type": "int", "default": -1, "range": [0, 500000], "special": [-1, 0], "special_weights": [0.25, 0.25], "range_weight": 0.5}, "kernel_sched_latency_ns": {"type": "int", "default": 2000000, "range": [0, 1000000000], "quantization_bins": 11}}}}`, "cost 1 vs 2"},
		{"different range", `{"kernel": {"cost": 1, "params": {"kernel_sched_migration_cost_ns": {"type": "int", "default": -1, "range": [0, 400000], "special": [-1, 0], "special_weights": [0.25, 0.25], "range_weight": 0.5}, "kernel_sched_latency_ns": {"type": "int", "default": 2000000, "range": [0, 1000000000], "quantization_bins": 11}}}}`, `tunable "kernel_sched_migration_cost_ns" differs in range`},
		{"different tunables", `{"kernel": {"cost": 1, "params": {"kernel_sched_latency_ns": {"type": "int", "default": 2000000, "range": [0, 1000000000], "quantization_bins": 11}}}}`, "tunables [kernel_sched_latency_ns, kernel_sched_migration_cost_ns] vs [kernel_sched_latency_ns]"},
		{"tunable in another group", `{"zz": {"cost": 1, "params": {"idle": {"type": "int", "range": [0, 3], "default": 1}}}}`, `tunable "idle" of group "zz" is already defined in group "boot"`},
	}
	for _, tc := range conflicts {
		t.Run(tc.name, func(t *testing.T) {
			g := base()
			before := g.GroupNames()
			other := mustParse(t, tc.doc)
			err := g.Merge(other)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Merge error %v, want %q", err, tc.msg)
			}
			if diff := cmp.Diff(before, g.GroupNames()); diff != "" {
				t.Errorf("failed merge changed g (-before +after):\n%s", diff)
			}
		})
	}
	t.Run("tunable in two groups of other", func(t *testing.T) {
		g := base()
		a, _ := NewTunable("q", Def{Type: Int, Range: []any{0, 3}, Default: 1})
		b, _ := NewTunable("q", Def{Type: Int, Range: []any{0, 3}, Default: 1})
		ga, _ := NewGroup("y1", 1, "", a)
		gb, _ := NewGroup("y2", 1, "", b)
		other := &Groups{}
		other.init()
		other.groups = []*CovariantGroup{ga, gb} // New would refuse this
		if err := g.Merge(other); err == nil || !strings.Contains(err.Error(), `tunable "q" of group "y2" is already defined in group "y1"`) {
			t.Errorf("Merge error %v", err)
		}
		if g.Group("y1") != nil {
			t.Error("failed merge added a group")
		}
	})
}

func TestNewAndNewGroup(t *testing.T) {
	a, err := NewTunable("a", Def{Type: Int, Range: []any{0, 10}, Default: 3, Meta: map[string]any{"unit": "MB"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewTunable("b", Def{Type: Categorical, Values: []any{"x", "y"}, Default: "y"})
	if err != nil {
		t.Fatal(err)
	}
	ga, err := NewGroup("ga", 4, "group a", a, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewGroup("other", 1, "", a); err == nil || !strings.Contains(err.Error(), `already belongs to group "ga"`) {
		t.Errorf("tunable in two groups: %v", err)
	}
	if _, err := NewGroup("$x", 1, ""); err == nil {
		t.Error("group name with $ accepted")
	}
	c, _ := NewTunable("a", Def{Type: Float, Range: []any{0.0, 1.0}, Default: 0.5})
	gc, _ := NewGroup("gc", 1, "", c)
	if _, err := New(ga, gc); err == nil || !strings.Contains(err.Error(), `tunable "a" of group "gc" is already defined in group "ga"`) {
		t.Errorf("New with duplicate tunable: %v", err)
	}
	d, _ := NewTunable("d", Def{Type: Float, Range: []any{0.0, 1.0}, Default: 0.5})
	gd, _ := NewGroup("ga", 1, "", d)
	if _, err := New(ga, gd); err == nil || !strings.Contains(err.Error(), `duplicate covariant group "ga"`) {
		t.Errorf("New with duplicate group: %v", err)
	}
	g, err := New(ga)
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != "{ ga::a[int]((0, 10):3)=3, ga::b[categorical](['x', 'y']:y)=y }" {
		t.Errorf("String() = %s", g.String())
	}
	if diff := cmp.Diff(map[string]any{"unit": "MB"}, g.Get("a").Meta()); diff != "" {
		t.Errorf("meta (-want +got):\n%s", diff)
	}
	// Def round trip.
	for _, tu := range g.Tunables() {
		again, err := NewTunable(tu.Name(), tu.Def())
		if err != nil {
			t.Fatalf("NewTunable(Def()): %v", err)
		}
		if again.repr() != tu.repr() || diffDefinition(again.def, tu.def) != "" {
			t.Errorf("Def round trip: %s vs %s", again.repr(), tu.repr())
		}
	}
	var zero Groups
	if zero.Len() != 0 || zero.Get("x") != nil || zero.String() != "{  }" {
		t.Error("zero Groups")
	}
}

func TestValuesFiles(t *testing.T) {
	g := mustParse(t, mlosFixture)
	doc, err := source.Parse("values.jsonc", []byte(`{
  "$schema": "https://raw.githubusercontent.com/microsoft/MLOS/main/mlos_bench/mlos_bench/config/schemas/tunables/tunable-values-schema.json",
  // comment
  "kernel_sched_migration_cost_ns": 400000,
  "kernel_sched_latency_ns": 1e7,
  "idle": "mwait",
}`))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := ParseValues(doc.At())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kernel_sched_migration_cost_ns": int64(400000), "kernel_sched_latency_ns": 1e7, "idle": "mwait"}
	if diff := cmp.Diff(want, vals); diff != "" {
		t.Errorf("ParseValues (-want +got):\n%s", diff)
	}
	if err := g.ApplyValues(vals, doc.At()); err != nil {
		t.Fatal(err)
	}
	if g.Values()["kernel_sched_latency_ns"] != int64(10000000) {
		t.Errorf("values: %v", g.Values())
	}

	bad, err := source.Parse("bad.jsonc", []byte(`{
  "idle": "sleep",
  "nope": 1,
  "kernel_sched_latency_ns": 1.5
}`))
	if err != nil {
		t.Fatal(err)
	}
	vals, err = ParseValues(bad.At())
	if err != nil {
		t.Fatal(err)
	}
	before := g.Values()
	err = g.ApplyValues(vals, bad.At())
	if err == nil {
		t.Fatal("bad values applied")
	}
	if diff := cmp.Diff(before, g.Values()); diff != "" {
		t.Errorf("failed ApplyValues changed values:\n%s", diff)
	}
	got := map[string]string{}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		se := asSourceError(t, e)
		got[se.Path] = se.Pos.String()
		if se.File != "bad.jsonc" {
			t.Errorf("file %q", se.File)
		}
	}
	wantPos := map[string]string{"/idle": "2:11", "/nope": "3:3", "/kernel_sched_latency_ns": "4:30"}
	if diff := cmp.Diff(wantPos, got); diff != "" {
		t.Errorf("error positions (-want +got):\n%s\n%v", diff, err)
	}
	if !strings.Contains(err.Error(), "loss of precision") {
		t.Errorf("error lacks loss of precision: %v", err)
	}

	badDocs := []struct{ name, text, path, msg string }{
		{"null", `{"a": null}`, "/a", "must be a string, number or boolean, got null"},
		{"array", `{"a": [1]}`, "/a", "got array"},
		{"object", `{"a": {"b": 1}}`, "/a", "got object"},
		{"tunable_values key", `{"tunable_values": "x"}`, "/tunable_values", "not allowed here"},
		{"dollar key", `{"$x": 1}`, "/$x", "reserved"},
		{"not an object", `[1]`, "", "must be an object"},
	}
	for _, tc := range badDocs {
		t.Run(tc.name, func(t *testing.T) {
			d, err := source.Parse("v.json", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseValues(d.At())
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want %q", err, tc.msg)
			}
			if se := asSourceError(t, err); se.Path != tc.path {
				t.Errorf("path %q, want %q", se.Path, tc.path)
			}
		})
	}
	// Empty values restore defaults.
	empty, _ := source.Parse("e.json", []byte(`{}`))
	vals, err = ParseValues(empty.At())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ApplyValues(vals, empty.At()); err != nil || !g.IsDefaults() {
		t.Errorf("empty values file: %v, defaults %v", err, g.IsDefaults())
	}
	// Big integers survive as json.Number.
	big, _ := source.Parse("b.json", []byte(`{"a": 100000000000000000000}`))
	vals, _ = ParseValues(big.At())
	if vals["a"] != json.Number("100000000000000000000") {
		t.Errorf("big int: %#v", vals["a"])
	}
}

func TestCardinalityAndGridValues(t *testing.T) {
	g := mustParse(t, `{"g": {"cost": 1, "params": {
  "c": {"type": "categorical", "values": ["a", "b", "c"], "default": "a"},
  "i": {"type": "int", "range": [1, 5], "special": [-1, 3], "default": 3},
  "iq": {"type": "int", "range": [100, 1000], "quantization_bins": 10, "default": 100},
  "iq_uneven": {"type": "int", "range": [0, 10], "quantization_bins": 4, "default": 0},
  "iq_too_many_bins": {"type": "int", "range": [0, 3], "quantization_bins": 10, "default": 0},
  "iq_log": {"type": "int", "range": [1, 1000], "quantization_bins": 4, "log": true, "default": 1},
  "fq": {"type": "float", "range": [0, 1], "quantization_bins": 11, "special": [-1], "default": 0},
  "fq_log": {"type": "float", "range": [1, 100], "quantization_bins": 3, "log": true, "default": 1},
  "f": {"type": "float", "range": [0, 1], "default": 0},
  "wide": {"type": "int", "range": [0, 100000000], "default": 0}
}}}`)
	cases := []struct {
		name string
		n    int64
		fin  bool
		grid []any
		err  string
	}{
		{"c", 3, true, []any{"a", "b", "c"}, ""},
		{"i", 6, true, []any{int64(1), int64(2), int64(3), int64(4), int64(5), int64(-1)}, ""},
		{"iq", 10, true, []any{int64(100), int64(200), int64(300), int64(400), int64(500), int64(600), int64(700), int64(800), int64(900), int64(1000)}, ""},
		{"iq_uneven", 4, true, []any{int64(0), int64(3), int64(7), int64(10)}, ""},
		{"iq_too_many_bins", 4, true, []any{int64(0), int64(1), int64(2), int64(3)}, ""},
		{"iq_log", 4, true, []any{int64(1), int64(10), int64(100), int64(1000)}, ""},
		{"fq", 12, true, []any{0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8, 0.9, 1.0, -1.0}, ""},
		{"fq_log", 3, true, []any{1.0, 10.0, 100.0}, ""},
		{"f", 0, false, nil, "unquantized float"},
		{"wide", 100000001, true, nil, "too many to enumerate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tu := g.Get(tc.name)
			n, fin := tu.Cardinality()
			if n != tc.n || fin != tc.fin {
				t.Errorf("Cardinality() = %d, %v; want %d, %v", n, fin, tc.n, tc.fin)
			}
			grid, err := tu.GridValues()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("GridValues error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.grid, grid); diff != "" {
				t.Errorf("GridValues (-want +got):\n%s", diff)
			}
			if int64(len(grid)) != n {
				t.Errorf("len(GridValues) %d != Cardinality %d", len(grid), n)
			}
			for _, v := range grid {
				if _, err := tu.Coerce(v); err != nil {
					t.Errorf("grid value %v is invalid: %v", v, err)
				}
			}
		})
	}
}

func TestConformanceGoodTunableParams(t *testing.T) {
	dir := testenv.ConformanceDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "tunable-params", "good", "*", "*.jsonc"))
	if len(files) == 0 {
		t.Fatalf("no tunable-params good cases under %s", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := source.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParseParams(doc.At())
			if err != nil {
				t.Fatalf("ParseParams: %v", err)
			}
			if g.Len() == 0 || !g.IsDefaults() {
				t.Errorf("%d tunables, defaults %v", g.Len(), g.IsDefaults())
			}
			sp := g.Space()
			p, err := sp.Encode(g.Values())
			if err != nil {
				t.Fatal(err)
			}
			vals, err := sp.Decode(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Copy().Assign(vals); err != nil {
				t.Errorf("decoded defaults are invalid: %v", err)
			}
		})
	}
	if raw, err := os.ReadFile(filepath.Join(testenv.ConformanceDir(t), "tunable-params", "good", "full", "full-tunable-params-test.jsonc")); err == nil {
		doc, _ := source.Parse("full.jsonc", raw)
		g, err := ParseParams(doc.At())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"True", "1", "true"}, g.Get("cat-mixed").Values()); diff != "" {
			t.Errorf("cat-mixed values (-want +got):\n%s", diff)
		}
		if got := g.Get("cat-bool").Value(); got != "True" {
			t.Errorf("cat-bool default %v", got)
		}
	}
}

func TestAccessors(t *testing.T) {
	g := mustParse(t, `{"g": {"cost": 1, "params": {
  "n": {"type": "float", "description": "a float", "range": [0.5, 8], "special": [-1], "special_weights": [1], "range_weight": 3,
        "quantization_bins": 4, "log": true, "default": 1, "distribution": {"type": "normal", "params": {"mu": 2, "sigma": 0.5}}},
  "i": {"type": "int", "range": [-3, 3], "default": 0},
  "c": {"type": "categorical", "values": ["a", "b"], "values_weights": [2, 1], "default": "a"}
}}}`)
	n := g.Get("n")
	lo, hi := n.Range()
	sw, rw, ok := n.SpecialWeights()
	dist, hasDist := n.Distribution()
	got := []any{n.Type(), n.Description(), n.Default(), lo, hi, n.Special(), sw, rw, ok, n.QuantizationBins(), n.IsLog(), dist, hasDist}
	want := []any{Float, "a float", 1.0, 0.5, 8.0, []any{-1.0}, []float64{1}, 3.0, true, 4, true, Distribution{Type: Normal, Mu: 2, Sigma: 0.5}, true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("float accessors (-want +got):\n%s", diff)
	}
	if err := n.Set(-1); err != nil || !n.IsSpecial() || n.InRange() || n.Float() != -1 || n.Int() != -1 {
		t.Errorf("special value: err %v special %v in range %v", err, n.IsSpecial(), n.InRange())
	}
	if err := n.Set(2.5); err != nil || n.Int() != 2 || n.IsSpecial() {
		t.Errorf("Int() of 2.5 = %d (%v)", n.Int(), err)
	}
	i := g.Get("i")
	ilo, ihi := i.IntRange()
	if ilo != -3 || ihi != 3 || i.Special() != nil || i.IsSpecial() || i.IsLog() || i.QuantizationBins() != 0 {
		t.Errorf("int accessors: %d %d %v", ilo, ihi, i.Special())
	}
	if _, _, ok := i.SpecialWeights(); ok {
		t.Error("SpecialWeights without weights")
	}
	if _, ok := i.Distribution(); ok {
		t.Error("Distribution without one")
	}
	c := g.Get("c")
	if diff := cmp.Diff([]float64{2, 1}, c.ValuesWeights()); diff != "" {
		t.Errorf("ValuesWeights (-want +got):\n%s", diff)
	}
	if c.Int() != 0 || c.Float() != 0 || c.IsSpecial() || c.InRange() || c.Type() != Categorical {
		t.Error("categorical numeric accessors")
	}
	if len(g.Groups()) != 1 || len(g.Group("g").Values()) != 3 || g.Group("g").IsDefaults() {
		t.Error("group accessors")
	}
}

func TestMergeComparesEveryDefinitionField(t *testing.T) {
	base := `{"type": "int", "range": [0, 10], "special": [-1], "special_weights": [1], "range_weight": 1, "quantization_bins": 3, "log": true, "default": 0, "distribution": {"type": "beta", "params": {"alpha": 1, "beta": 2}}, "meta": {"u": "MB"}}`
	cases := map[string]string{
		"type":                         `{"type": "float", "range": [0, 10], "default": 0}`,
		"default":                      strings.Replace(base, `"default": 0`, `"default": 5`, 1),
		"range":                        strings.Replace(base, `[0, 10]`, `[0, 11]`, 1),
		"special":                      strings.Replace(base, `"special": [-1]`, `"special": [-2]`, 1),
		"special_weights/range_weight": strings.Replace(base, `"range_weight": 1`, `"range_weight": 2`, 1),
		"quantization_bins":            strings.Replace(base, `"quantization_bins": 3`, `"quantization_bins": 4`, 1),
		"log":                          strings.Replace(base, `"log": true`, `"log": false`, 1),
		"distribution":                 strings.Replace(base, `"beta": 2`, `"beta": 3`, 1),
		"meta":                         strings.Replace(base, `"MB"`, `"GB"`, 1),
	}
	doc := func(def string) string { return `{"g": {"cost": 1, "params": {"x": ` + def + `}}}` }
	for field, other := range cases {
		t.Run(field, func(t *testing.T) {
			g := mustParse(t, doc(base))
			err := g.Merge(mustParse(t, doc(other)))
			if err == nil || !strings.Contains(err.Error(), `tunable "x" differs in `+field) {
				t.Errorf("Merge error %v, want a difference in %s", err, field)
			}
		})
	}
	cats := map[string][2]string{
		"values":         {`{"type": "categorical", "values": ["a", "b"], "default": "a"}`, `{"type": "categorical", "values": ["a", "c"], "default": "a"}`},
		"values_weights": {`{"type": "categorical", "values": ["a", "b"], "values_weights": [1, 2], "default": "a"}`, `{"type": "categorical", "values": ["a", "b"], "default": "a"}`},
	}
	for field, pair := range cats {
		t.Run(field, func(t *testing.T) {
			g := mustParse(t, doc(pair[0]))
			if err := g.Merge(mustParse(t, doc(pair[1]))); err == nil || !strings.Contains(err.Error(), "differs in "+field) {
				t.Errorf("Merge error %v", err)
			}
		})
	}
	g := mustParse(t, doc(base))
	if err := g.Merge(mustParse(t, doc(strings.Replace(base, `"meta"`, `"description": "other", "meta"`, 1)))); err != nil {
		t.Errorf("identical definitions: %v", err)
	}
}

func TestPythonNumberParsing(t *testing.T) {
	ints := map[string]int64{"5": 5, " -7 ": -7, "1_000": 1000, "+3": 3}
	for s, want := range ints {
		if got, err := pyfmt.ParseInt(s); err != nil || got != want {
			t.Errorf("pyfmt.ParseInt(%q) = %d, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "1_", "_1", "1__0", "0x10", "5.0", "99999999999999999999"} {
		if _, err := pyfmt.ParseInt(s); err == nil {
			t.Errorf("pyfmt.ParseInt(%q) accepted", s)
		}
	}
	floats := map[string]float64{"1.5": 1.5, " 2e3 ": 2000, "1_000.5": 1000.5, "-inf": math.Inf(-1), "Infinity": math.Inf(1), "1e999": math.Inf(1)}
	for s, want := range floats {
		if got, err := pyfmt.ParseFloat(s); err != nil || got != want {
			t.Errorf("pyfmt.ParseFloat(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "abc", "0x1p3", "1__0", "1.5_"} {
		if _, err := pyfmt.ParseFloat(s); err == nil {
			t.Errorf("pyfmt.ParseFloat(%q) accepted", s)
		}
	}
	// json.Number and unsigned inputs.
	g := mustParse(t, `{"g": {"cost": 1, "params": {"c": {"type": "categorical", "values": [18446744073709551615, 100000000000000000000, 255], "default": 255}}}}`)
	c := g.Get("c")
	for _, v := range []any{uint64(18446744073709551615), json.Number("100000000000000000000"), json.Number("0xFF"), uint(255)} {
		if err := c.Set(v); err != nil {
			t.Errorf("Set(%v): %v", v, err)
		}
	}
}
