package decode

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type intoInner struct {
	Retries int     `json:"retries"`
	Weight  float64 `json:"weight"`
}

type intoEmbedded struct {
	Verbose bool `json:"verbose"`
}

type intoTarget struct {
	intoEmbedded
	Count    int                  `json:"count"`
	Port     uint16               `json:"port"`
	Ratio    float64              `json:"ratio"`
	Enabled  bool                 `json:"enabled"`
	Limit    *int64               `json:"limit"`
	Name     string               `json:"name"`
	Timeout  Duration             `json:"timeout"`
	Inner    intoInner            `json:"inner"`
	List     []int                `json:"list"`
	ByName   map[string]bool      `json:"by_name"`
	Quoted   int                  `json:"quoted,string"`
	Any      any                  `json:"any"`
	Nested   map[string]intoInner `json:"nested"`
	CamelKey int
}

func ptr[T any](v T) *T { return &v }

// TestIntoFollowsTheConverters: decode.Into reads bools, integers and
// floats by the same rule as Bool, Int and Float, at any depth; what the
// rule refuses is an error naming the key.
func TestIntoFollowsTheConverters(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]any
		want    intoTarget
		wantErr string
	}{
		{name: "typed values", in: map[string]any{"count": int64(3), "ratio": 0.5, "enabled": true},
			want: intoTarget{Count: 3, Ratio: 0.5, Enabled: true}},
		{name: "int from string", in: map[string]any{"count": "3"}, want: intoTarget{Count: 3}},
		{name: "int from padded string", in: map[string]any{"count": " 42 "}, want: intoTarget{Count: 42}},
		{name: "int from integral float", in: map[string]any{"count": 3.0}, want: intoTarget{Count: 3}},
		{name: "int from integral float string", in: map[string]any{"count": "3.0"}, want: intoTarget{Count: 3}},
		{name: "uint from string", in: map[string]any{"port": "5432"}, want: intoTarget{Port: 5432}},
		{name: "pointer int from string", in: map[string]any{"limit": "7"}, want: intoTarget{Limit: ptr(int64(7))}},
		{name: "float from string", in: map[string]any{"ratio": "2.5"}, want: intoTarget{Ratio: 2.5}},
		{name: "float from int", in: map[string]any{"ratio": int64(2)}, want: intoTarget{Ratio: 2}},
		{name: "bool yes", in: map[string]any{"enabled": "yes"}, want: intoTarget{Enabled: true}},
		{name: "bool OFF", in: map[string]any{"enabled": "OFF"}, want: intoTarget{Enabled: false}},
		{name: "bool from number", in: map[string]any{"enabled": int64(1)}, want: intoTarget{Enabled: true}},
		{name: "bool in embedded struct", in: map[string]any{"verbose": "on"}, want: intoTarget{intoEmbedded: intoEmbedded{Verbose: true}}},
		{name: "nested struct", in: map[string]any{"inner": map[string]any{"retries": "2", "weight": "0.25"}},
			want: intoTarget{Inner: intoInner{Retries: 2, Weight: 0.25}}},
		{name: "slice", in: map[string]any{"list": []any{"1", int64(2), 3.0}}, want: intoTarget{List: []int{1, 2, 3}}},
		{name: "map of bools", in: map[string]any{"by_name": map[string]any{"a": "y", "b": "false"}},
			want: intoTarget{ByName: map[string]bool{"a": true, "b": false}}},
		{name: "map of structs", in: map[string]any{"nested": map[string]any{"x": map[string]any{"retries": "4"}}},
			want: intoTarget{Nested: map[string]intoInner{"x": {Retries: 4}}}},
		{name: "field name in another case", in: map[string]any{"camelkey": "9"}, want: intoTarget{CamelKey: 9}},
		{name: "duration keeps its own decoder", in: map[string]any{"timeout": "90"}, want: intoTarget{Timeout: Duration(90 * time.Second)}},
		{name: "string option untouched", in: map[string]any{"quoted": "5"}, want: intoTarget{Quoted: 5}},
		{name: "interface untouched", in: map[string]any{"any": "3"}, want: intoTarget{Any: "3"}},
		{name: "string field keeps strings", in: map[string]any{"name": "3"}, want: intoTarget{Name: "3"}},
		{name: "non-integral float for int", in: map[string]any{"count": 3.5}, wantErr: `config key "count"`},
		{name: "non-integral string for int", in: map[string]any{"count": "3.5"}, wantErr: `config key "count"`},
		{name: "word for int", in: map[string]any{"count": "three"}, wantErr: `config key "count"`},
		{name: "negative for uint", in: map[string]any{"port": "-1"}, wantErr: `config key "port"`},
		{name: "unknown bool word", in: map[string]any{"enabled": "maybe"}, wantErr: `config key "enabled"`},
		{name: "bool for int", in: map[string]any{"count": true}, wantErr: `config key "count"`},
		{name: "number for string", in: map[string]any{"name": int64(3)}, wantErr: `config key "name"`},
		{name: "nested error", in: map[string]any{"inner": map[string]any{"retries": "x"}}, wantErr: `config key "inner.retries"`},
		{name: "unknown key", in: map[string]any{"nope": "1"}, wantErr: `unknown config key "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got intoTarget
			err := Into(tc.in, &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Into(%v) = %v, want an error with %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Into(%v): %v", tc.in, err)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(intoTarget{})); d != "" {
				t.Errorf("Into(%v) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

// TestIntoAgreesWithTheScalarConverters: for every input the scalar
// converters accept, a struct field of that kind gets the same value, and
// what they refuse Into refuses.
func TestIntoAgreesWithTheScalarConverters(t *testing.T) {
	inputs := []any{"3", " 3 ", "3.0", "1e3", "-7", 3.0, int64(3), 3.5, "3.5", "yes", "no", "Y", "off", "on", "t", "F",
		"1", "0", true, false, "maybe", "", int64(0), 0.25, "nan"}
	for _, in := range inputs {
		var ib struct {
			I int64   `json:"i"`
			B bool    `json:"b"`
			F float64 `json:"f"`
		}
		wantI, okI := Int(in)
		errI := Into(map[string]any{"i": in}, &ib)
		if okI != (errI == nil) || okI && ib.I != wantI {
			t.Errorf("int %#v: Into %v (%v), Int %v (%v)", in, ib.I, errI, wantI, okI)
		}
		wantB, okB := Bool(in)
		errB := Into(map[string]any{"b": in}, &ib)
		if okB != (errB == nil) || okB && ib.B != wantB {
			t.Errorf("bool %#v: Into %v (%v), Bool %v (%v)", in, ib.B, errB, wantB, okB)
		}
		wantF, okF := Float(in)
		errF := Into(map[string]any{"f": in}, &ib)
		if okF != (errF == nil) || okF && ib.F != wantF {
			t.Errorf("float %#v: Into %v (%v), Float %v (%v)", in, ib.F, errF, wantF, okF)
		}
	}
}
