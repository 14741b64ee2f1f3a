package environments

import (
	"math"
	"testing"
)

// TestSetupKey: the key hashes exactly the named values (own tunables,
// declared const_args and required_args), by name in sorted order, with
// their types; other parameters do not count.
func TestSetupKey(t *testing.T) {
	params := Params{
		"build_opt": "O2", "src": "/src", "jobs": int64(4),
		"trial_id": int64(7), "experiment_id": "e", "runtime_knob": int64(3),
	}
	tun := map[string]string{"build_opt": "O2"}
	names := []string{"src", "jobs"}
	base := SetupKey(params, tun, names)
	if len(base) != 64 {
		t.Fatalf("key %q is not a hex SHA-256", base)
	}

	with := func(k string, v any) Params {
		p := Params{}
		for kk, vv := range params {
			p[kk] = vv
		}
		p[k] = v
		return p
	}
	tests := []struct {
		name   string
		params Params
		tun    map[string]string
		names  []string
		same   bool
	}{
		{"names in another order", params, tun, []string{"jobs", "src"}, true},
		{"duplicate names", params, tun, []string{"src", "jobs", "src", "build_opt"}, true},
		{"trial_id not named", with("trial_id", int64(8)), tun, names, true},
		{"a parameter not named", with("runtime_knob", int64(9)), tun, names, true},
		{"own tunable changed", with("build_opt", "O3"), tun, names, false},
		{"const_arg changed", with("src", "/other"), tun, names, false},
		{"int becomes string", with("jobs", "4"), tun, names, false},
		{"int becomes float", with("jobs", 4.0), tun, names, false},
		{"value becomes null", with("jobs", nil), tun, names, false},
		{"trial_id named", with("trial_id", int64(8)), tun, append([]string{"trial_id"}, names...), false},
		{"a name more", params, tun, append([]string{"runtime_knob"}, names...), false},
		{"absent differs from null", Params{"build_opt": "O2", "src": "/src"}, tun, names, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SetupKey(tt.params, tt.tun, tt.names)
			if (got == base) != tt.same {
				t.Errorf("same key = %v, want %v", got == base, tt.same)
			}
		})
	}

	// Absent and null differ; lists, NaN and infinities are hashed.
	if SetupKey(Params{}, nil, []string{"a"}) == SetupKey(Params{"a": nil}, nil, []string{"a"}) {
		t.Error("an absent parameter hashes like a null one")
	}
	odd := Params{"l": []any{"a", int64(1), []any{true}}, "n": math.NaN(), "i": math.Inf(1)}
	if SetupKey(odd, nil, []string{"l", "n", "i"}) != SetupKey(odd, nil, []string{"i", "n", "l"}) {
		t.Error("the key of lists, NaN and infinities is not stable")
	}
	if SetupKey(Params{"l": []any{"a", "b"}}, nil, []string{"l"}) == SetupKey(Params{"l": []any{"a,b"}}, nil, []string{"l"}) {
		t.Error("lists are not hashed element by element")
	}
	// A name that is both a tunable and a const_arg counts once.
	if SetupKey(params, tun, names) != SetupKey(params, tun, append(names, "build_opt")) {
		t.Error("a tunable named in const_args counts twice")
	}
}

func TestParseSwitch(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want bool
		err  bool
	}{{true, true, false}, {false, false, false}, {"true", true, false}, {"0", false, false},
		// The shared rule (decode.Bool): strtobool's words, numbers as bool().
		{"yes", true, false}, {" Off ", false, false}, {int64(1), true, false},
		{"maybe", false, true}, {nil, false, true}} {
		got, err := ParseSwitch(ReuseSetupKey, tt.v)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ParseSwitch(%v) = %v, %v", tt.v, got, err)
		}
	}
}
