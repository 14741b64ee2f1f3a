package tunables

import (
	"errors"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
)

// oneTunableDoc puts a tunable definition on line 5 of a params document.
const oneTunablePrefix = `      "x": `

func oneTunableDoc(snippet string) string {
	return "{\n  \"g\": {\n    \"cost\": 1,\n    \"params\": {\n" + oneTunablePrefix + snippet + "\n    }\n  }\n}\n"
}

func parseText(t *testing.T, text string) (*Groups, error) {
	t.Helper()
	doc, err := source.Parse("test.jsonc", []byte(text))
	if err != nil {
		t.Fatalf("syntax error in test document: %v", err)
	}
	return ParseParams(doc.At())
}

func asSourceError(t *testing.T, err error) *source.Error {
	t.Helper()
	var se *source.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *source.Error", err, err)
	}
	return se
}

func TestTunableValidity(t *testing.T) {
	cases := []struct {
		name    string
		snippet string
		// bad cases: the error's JSON path, a piece of its message and the
		// text of the snippet it points at (its first occurrence).
		path, msg, at string
	}{
		// Good definitions.
		{name: "int", snippet: `{"type": "int", "range": [0, 10], "default": 5}`},
		{name: "int special default outside range", snippet: `{"type": "int", "range": [0, 10], "special": [-1], "default": -1}`},
		{name: "int integral float literals", snippet: `{"type": "int", "range": [0.0, 10.0], "default": 5.0}`},
		{name: "float int literals", snippet: `{"type": "float", "range": [0, 1], "default": 0}`},
		{name: "log with range starting at 0 (mlos_bench accepts it)", snippet: `{"type": "int", "range": [0, 100], "log": true, "default": 0}`},
		{name: "quantized with integral float bins", snippet: `{"type": "float", "range": [0, 1], "quantization_bins": 2.0, "default": 0}`},
		{name: "weights", snippet: `{"type": "int", "range": [0, 100], "special": [-1, 0], "special_weights": [0, 10], "range_weight": 90, "default": 0}`},
		{name: "categorical mixed", snippet: `{"type": "categorical", "values": [true, 1, "true", 1.5], "values_weights": [1, 0, 1, 1], "default": 1.5}`},
		{name: "uniform without params", snippet: `{"type": "float", "range": [0, 1], "default": 0, "distribution": {"type": "uniform"}}`},
		{name: "uniform with empty params", snippet: `{"type": "float", "range": [0, 1], "default": 0, "distribution": {"type": "uniform", "params": {}}}`},
		{name: "normal", snippet: `{"type": "float", "range": [0, 1], "default": 0, "distribution": {"type": "normal", "params": {"mu": 0.5, "sigma": 0.1}}}`},
		{name: "beta", snippet: `{"type": "int", "range": [0, 9], "default": 0, "distribution": {"type": "beta", "params": {"alpha": 2, "beta": 5}}}`},
		{name: "meta", snippet: `{"type": "int", "range": [0, 9], "default": 0, "meta": {"suffix": "MB", "n": 1, "b": true, "z": null, "list": ["a", 1, false, null]}}`},

		// Type and required fields.
		{name: "missing type", snippet: `{"range": [0, 10], "default": 5}`, path: "/g/params/x", msg: "needs a type", at: `{"range"`},
		{name: "unknown type", snippet: `{"type": "bool", "default": 5}`, path: "/g/params/x/type", msg: `unknown tunable type "bool"`, at: `"bool"`},
		{name: "missing default", snippet: `{"type": "int", "range": [0, 10]}`, path: "/g/params/x", msg: "needs a default", at: `{"type"`},
		{name: "int default not integral", snippet: `{"type": "int", "range": [0, 10], "default": 5.5}`, path: "/g/params/x/default", msg: "must be an integer, got 5.5", at: `5.5`},
		{name: "int default string", snippet: `{"type": "int", "range": [0, 10], "default": "5"}`, path: "/g/params/x/default", msg: "must be an integer, got string", at: `"5"`},
		{name: "unknown property", snippet: `{"type": "int", "range": [0, 10], "default": 5, "bogus": 1}`, path: "/g/params/x/bogus", msg: `property "bogus" is not allowed`, at: `"bogus"`},
		{name: "description not a string", snippet: `{"type": "int", "range": [0, 10], "default": 5, "description": 3}`, path: "/g/params/x/description", msg: "must be a string", at: `3}`},

		// Categorical.
		{name: "categorical without values", snippet: `{"type": "categorical", "default": "a"}`, path: "/g/params/x/values", msg: "non-empty list of values", at: `{"type"`},
		{name: "categorical empty values", snippet: `{"type": "categorical", "values": [], "default": "a"}`, path: "/g/params/x/values", msg: "non-empty array", at: `[]`},
		{name: "categorical with range", snippet: `{"type": "categorical", "values": ["a"], "range": [0, 1], "default": "a"}`, path: "/g/params/x/range", msg: `property "range" is not allowed in a categorical tunable`, at: `"range"`},
		{name: "categorical with log", snippet: `{"type": "categorical", "values": ["a"], "log": false, "default": "a"}`, path: "/g/params/x/log", msg: "not allowed", at: `"log"`},
		{name: "categorical with special", snippet: `{"type": "categorical", "values": ["a"], "special": ["b"], "default": "a"}`, path: "/g/params/x/special", msg: "not allowed", at: `"special"`},
		{name: "categorical duplicate values", snippet: `{"type": "categorical", "values": ["a", "b", "a"], "default": "a"}`, path: "/g/params/x/values/2", msg: "values must be unique", at: `"a"]`},
		{name: "categorical duplicate after str()", snippet: `{"type": "categorical", "values": [true, "True"], "default": "True"}`, path: "/g/params/x/values/1", msg: "values must be unique", at: `"True"]`},
		{name: "categorical duplicate numbers", snippet: `{"type": "categorical", "values": [1, 1.0], "default": 1}`, path: "/g/params/x/values/1", msg: "values must be unique", at: `1.0]`},
		{name: "categorical null value", snippet: `{"type": "categorical", "values": ["a", null], "default": "a"}`, path: "/g/params/x/values/1", msg: "strings, numbers or booleans", at: `null`},
		{name: "categorical default not a value", snippet: `{"type": "categorical", "values": ["a", "b"], "default": "c"}`, path: "/g/params/x/default", msg: `default 'c' is not one of the values ['a', 'b']`, at: `"c"`},
		{name: "categorical default True vs true", snippet: `{"type": "categorical", "values": ["true"], "default": true}`, path: "/g/params/x/default", msg: `default 'True' is not one of`, at: `true}`},
		{name: "values_weights count", snippet: `{"type": "categorical", "values": ["a", "b", "c"], "values_weights": [50, 50], "default": "a"}`, path: "/g/params/x/values_weights", msg: "2 weights for 3 values", at: `[50`},
		{name: "values_weights negative", snippet: `{"type": "categorical", "values": ["a", "b"], "values_weights": [-1, 50], "default": "a"}`, path: "/g/params/x/values_weights/0", msg: "non-negative", at: `-1`},
		{name: "values_weights all zero", snippet: `{"type": "categorical", "values": ["a", "b"], "values_weights": [0, 0], "default": "a"}`, path: "/g/params/x/values_weights", msg: "must not all be zero", at: `[0, 0]`},
		{name: "values_weights empty", snippet: `{"type": "categorical", "values": ["a"], "values_weights": [], "default": "a"}`, path: "/g/params/x/values_weights", msg: "non-empty array", at: `[]`},

		// Numeric ranges.
		{name: "numeric without range", snippet: `{"type": "float", "default": 5}`, path: "/g/params/x/range", msg: "needs a range", at: `{"type"`},
		{name: "numeric with values", snippet: `{"type": "int", "range": [0, 10], "values": [1], "default": 5}`, path: "/g/params/x/values", msg: "not allowed in a int tunable", at: `"values"`},
		{name: "range reversed", snippet: `{"type": "int", "range": [10, 0], "default": 5}`, path: "/g/params/x/range", msg: "lo must be less than hi", at: `[10, 0]`},
		{name: "range empty float", snippet: `{"type": "float", "range": [1.5, 1.5], "default": 1.5}`, path: "/g/params/x/range", msg: "lo must be less than hi", at: `[1.5, 1.5]`},
		{name: "range of three", snippet: `{"type": "int", "range": [0, 10, 7], "default": 5}`, path: "/g/params/x/range", msg: "two numbers", at: `[0, 10, 7]`},
		{name: "range not numbers", snippet: `{"type": "int", "range": [0, "10"], "default": 5}`, path: "/g/params/x/range/1", msg: "must be numbers", at: `"10"`},
		{name: "int range not integral", snippet: `{"type": "int", "range": [0, 10.5], "default": 5}`, path: "/g/params/x/range/1", msg: "64-bit integers, got 10.5", at: `10.5`},
		{name: "range infinite", snippet: `{"type": "float", "range": [0, Infinity], "default": 5}`, path: "/g/params/x/range/1", msg: "finite", at: `Infinity`},
		{name: "default out of range", snippet: `{"type": "int", "range": [0, 10], "default": 11}`, path: "/g/params/x/default", msg: "11 is outside the range [0, 10]", at: `11`},
		{name: "float default out of range", snippet: `{"type": "float", "range": [0, 1], "special": [-1], "default": 2}`, path: "/g/params/x/default", msg: "2.0 is outside the range [0, 1] and not a special value [-1.0]", at: `2}`},

		// Special values and weights.
		{name: "special not a number", snippet: `{"type": "int", "range": [0, 10], "special": ["auto"], "default": 5}`, path: "/g/params/x/special/0", msg: "must be numbers", at: `"auto"`},
		{name: "int special not integral", snippet: `{"type": "int", "range": [0, 10], "special": [-1.5], "default": 5}`, path: "/g/params/x/special/0", msg: "64-bit integers", at: `-1.5`},
		{name: "special duplicate", snippet: `{"type": "int", "range": [0, 10], "special": [-1, -1], "default": 5}`, path: "/g/params/x/special/1", msg: "unique", at: `-1]`},
		{name: "special_weights without range_weight", snippet: `{"type": "int", "range": [0, 10], "special": [-1], "special_weights": [0.1], "default": 5}`, path: "/g/params/x/special_weights", msg: "also needs range_weight", at: `[0.1]`},
		{name: "range_weight without special_weights", snippet: `{"type": "int", "range": [0, 10], "special": [-1], "range_weight": 0.3, "default": 5}`, path: "/g/params/x/range_weight", msg: "also needs special_weights", at: `0.3`},
		{name: "special_weights without special", snippet: `{"type": "float", "range": [0, 10], "special_weights": [0.1, 0.9], "range_weight": 1, "default": 5}`, path: "/g/params/x/special_weights", msg: "without special values", at: `[0.1, 0.9]`},
		{name: "special_weights count", snippet: `{"type": "int", "range": [0, 10], "special": [0], "special_weights": [0.1, 0.1, 0.8], "range_weight": 0.1, "default": 5}`, path: "/g/params/x/special_weights", msg: "3 weights for 1 special values", at: `[0.1, 0.1`},
		{name: "special_weights negative", snippet: `{"type": "int", "range": [0, 10], "special": [0], "special_weights": [-1], "range_weight": 10, "default": 5}`, path: "/g/params/x/special_weights/0", msg: "non-negative", at: `-1]`},
		{name: "range_weight negative", snippet: `{"type": "int", "range": [0, 10], "special": [0], "special_weights": [1], "range_weight": -10, "default": 5}`, path: "/g/params/x/range_weight", msg: "non-negative", at: `-10`},
		{name: "all weights zero", snippet: `{"type": "int", "range": [0, 10], "special": [0], "special_weights": [0], "range_weight": 0, "default": 5}`, path: "/g/params/x/special_weights", msg: "must not all be zero", at: `[0], "range`},

		// Quantization, log, distribution.
		{name: "quantization_bins 1", snippet: `{"type": "int", "range": [0, 10], "quantization_bins": 1, "default": 5}`, path: "/g/params/x/quantization_bins", msg: "between 2 and", at: `1,`},
		{name: "quantization_bins 0", snippet: `{"type": "float", "range": [0, 10], "quantization_bins": 0, "default": 5}`, path: "/g/params/x/quantization_bins", msg: "between 2 and", at: `0, "default"`},
		{name: "quantization_bins fractional", snippet: `{"type": "float", "range": [0, 10], "quantization_bins": 2.5, "default": 5}`, path: "/g/params/x/quantization_bins", msg: "must be an integer", at: `2.5`},
		{name: "log not a bool", snippet: `{"type": "float", "range": [1, 10], "log": 1, "default": 5}`, path: "/g/params/x/log", msg: "true or false", at: `1, "default"`},
		{name: "unknown distribution", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "poisson"}}`, path: "/g/params/x/distribution/type", msg: `unknown distribution "poisson"`, at: `"poisson"`},
		{name: "normal without params", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "normal"}}`, path: "/g/params/x/distribution", msg: "needs params {mu, sigma}", at: `{"type": "normal"`},
		{name: "normal sigma zero", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "normal", "params": {"mu": 0, "sigma": 0}}}`, path: "/g/params/x/distribution/params/sigma", msg: "greater than 0", at: `0}}`},
		{name: "normal missing sigma", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "normal", "params": {"mu": 0}}}`, path: "/g/params/x/distribution/params", msg: `needs parameter "sigma"`, at: `{"mu"`},
		{name: "beta alpha negative", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "beta", "params": {"alpha": -1, "beta": 1}}}`, path: "/g/params/x/distribution/params/alpha", msg: "greater than 0", at: `-1`},
		{name: "beta with mu", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "beta", "params": {"alpha": 1, "beta": 1, "mu": 1}}}`, path: "/g/params/x/distribution/params/mu", msg: `unknown parameter "mu"`, at: `"mu"`},
		{name: "uniform with params", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "uniform", "params": {"a": 1}}}`, path: "/g/params/x/distribution/params/a", msg: "takes no parameters", at: `"a"`},
		{name: "distribution extra key", snippet: `{"type": "float", "range": [1, 10], "default": 5, "distribution": {"type": "uniform", "seed": 1}}`, path: "/g/params/x/distribution/seed", msg: "unknown property", at: `"seed"`},

		// Meta.
		{name: "meta not an object", snippet: `{"type": "int", "range": [0, 10], "default": 5, "meta": []}`, path: "/g/params/x/meta", msg: "must be an object", at: `[]}`},
		{name: "meta nested object", snippet: `{"type": "int", "range": [0, 10], "default": 5, "meta": {"a": {"b": 1}}}`, path: "/g/params/x/meta/a", msg: "no objects", at: `{"b"`},
		{name: "meta nested array", snippet: `{"type": "int", "range": [0, 10], "default": 5, "meta": {"a": [[1]]}}`, path: "/g/params/x/meta/a/0", msg: "array items", at: `[1]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, err := parseText(t, oneTunableDoc(tc.snippet))
			if tc.path == "" {
				if err != nil {
					t.Fatalf("ParseParams: %v", err)
				}
				if g.Get("x") == nil {
					t.Fatal("tunable x missing")
				}
				return
			}
			if err == nil {
				t.Fatal("ParseParams accepted the definition")
			}
			se := asSourceError(t, err)
			if se.Path != tc.path {
				t.Errorf("path %q, want %q (error: %v)", se.Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
			idx := strings.Index(tc.snippet, tc.at)
			if idx < 0 {
				t.Fatalf("bad test: %q not in snippet", tc.at)
			}
			wantCol := len(oneTunablePrefix) + idx + 1
			if se.File != "test.jsonc" || se.Pos.Line != 5 || se.Pos.Col != wantCol {
				t.Errorf("position %s:%d:%d, want test.jsonc:5:%d (%q)", se.File, se.Pos.Line, se.Pos.Col, wantCol, tc.at)
			}
		})
	}
}

func TestGroupValidity(t *testing.T) {
	cases := []struct {
		name, doc string
		path, msg string
		line, col int
	}{
		{
			name: "not an object",
			doc:  `[1]`,
			msg:  "must be an object", line: 1, col: 1,
		},
		{
			name: "group name starting with $",
			doc: `{
  "$group": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 1], "default": 0}}}
}`,
			path: "/$group", msg: "must not start with '$'", line: 2, col: 3,
		},
		{
			name: "empty group name",
			doc:  `{"": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 1], "default": 0}}}}`,
			path: "/", msg: "must not be empty", line: 1, col: 2,
		},
		{
			name: "group not an object",
			doc:  `{"g": 3}`,
			path: "/g", msg: "must be an object", line: 1, col: 7,
		},
		{
			name: "missing cost",
			doc:  `{"g": {"params": {"x": {"type": "int", "range": [0, 1], "default": 0}}}}`,
			path: "/g", msg: "needs a cost", line: 1, col: 7,
		},
		{
			name: "cost not a number",
			doc:  `{"g": {"cost": "1", "params": {"x": {"type": "int", "range": [0, 1], "default": 0}}}}`,
			path: "/g/cost", msg: "cost must be a number", line: 1, col: 16,
		},
		{
			name: "missing params",
			doc:  `{"g": {"cost": 1}}`,
			path: "/g", msg: "needs params", line: 1, col: 7,
		},
		{
			name: "empty params",
			doc:  `{"g": {"cost": 1, "params": {}}}`,
			path: "/g/params", msg: "at least one tunable", line: 1, col: 29,
		},
		{
			name: "unknown group property",
			doc:  `{"g": {"cost": 1, "weight": 2, "params": {"x": {"type": "int", "range": [0, 1], "default": 0}}}}`,
			path: "/g/weight", msg: `unknown property "weight"`, line: 1, col: 19,
		},
		{
			name: "tunable name with !",
			doc: `{"g": {"cost": 1, "params": {
  "a!b": {"type": "int", "range": [0, 1], "default": 0}}}}`,
			path: "/g/params/a!b", msg: "must not contain '!'", line: 2, col: 3,
		},
		{
			name: "duplicate tunable across groups",
			doc: `{
  "g1": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 1], "default": 0}}},
  "g2": {"cost": 2, "params": {
    "y": {"type": "int", "range": [0, 1], "default": 0},
    "x": {"type": "float", "range": [0, 1], "default": 0}
  }}
}`,
			path: "/g2/params/x", msg: `tunable "x" is already defined in group "g1"`, line: 5, col: 5,
		},
		{
			name: "$schema not a string",
			doc:  `{"$schema": 1}`,
			path: "/$schema", msg: "must be a string", line: 1, col: 13,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseText(t, tc.doc)
			if err == nil {
				t.Fatal("ParseParams accepted the document")
			}
			se := asSourceError(t, err)
			if tc.path != "" && se.Path != tc.path {
				t.Errorf("path %q, want %q (error: %v)", se.Path, tc.path, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not contain %q", err, tc.msg)
			}
			if se.Pos.Line != tc.line || se.Pos.Col != tc.col {
				t.Errorf("position %d:%d, want %d:%d (error: %v)", se.Pos.Line, se.Pos.Col, tc.line, tc.col, err)
			}
		})
	}
}

func TestParseParamsReportsSeveralProblems(t *testing.T) {
	_, err := parseText(t, `{
  "a": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 1], "default": 5}}},
  "b": {"cost": 1, "params": {"y": {"type": "int", "range": [0, 1], "default": 7}}}
}`)
	if err == nil {
		t.Fatal("accepted")
	}
	var lines []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		lines = append(lines, asSourceError(t, e).Pos.Line)
	}
	if len(lines) != 2 || lines[0] != 2 || lines[1] != 3 {
		t.Errorf("error lines %v, want [2 3]: %v", lines, err)
	}
}

func TestParseParamsSubObjectAndEmpty(t *testing.T) {
	doc, err := source.Parse("env.jsonc", []byte(`{"name": "env", "tunables": {"g": {"cost": 3, "params": {"x": {"type": "float", "range": [0, 1], "default": 2}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseParams(doc.At("tunables"))
	se := asSourceError(t, err)
	if se.Path != "/tunables/g/params/x/default" || se.File != "env.jsonc" {
		t.Errorf("error at %s %s: %v", se.File, se.Path, err)
	}
	if _, err := ParseParams(doc.At("missing")); err == nil {
		t.Error("no error for a missing sub-object")
	}
	g, err := parseText(t, `{"$schema": "https://raw.githubusercontent.com/microsoft/MLOS/main/mlos_bench/mlos_bench/config/schemas/tunables/tunable-params-schema.json"}`)
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 0 || g.String() != "{  }" {
		t.Errorf("empty groups: len %d, %q", g.Len(), g.String())
	}
}

func TestNewTunableErrors(t *testing.T) {
	rw := 0.5
	cases := []struct {
		name string
		tn   string
		def  Def
		msg  string
	}{
		{"bang in name", "a!b", Def{Type: Int, Range: []any{0, 1}, Default: 0}, "must not contain '!'"},
		{"empty name", "", Def{Type: Int, Range: []any{0, 1}, Default: 0}, "must not be empty"},
		{"no type", "x", Def{Default: 0}, "a type is required"},
		{"no default", "x", Def{Type: Int, Range: []any{0, 1}}, "default value is required"},
		{"log categorical", "x", Def{Type: Categorical, Values: []any{"a"}, Default: "a", Log: true}, "cannot have a log scale"},
		{"bins categorical", "x", Def{Type: Categorical, Values: []any{"a"}, Default: "a", QuantizationBins: 3}, "cannot be quantized"},
		{"range weight categorical", "x", Def{Type: Categorical, Values: []any{"a"}, Default: "a", RangeWeight: &rw}, "cannot have range_weight"},
		{"distribution categorical", "x", Def{Type: Categorical, Values: []any{"a"}, Default: "a", Distribution: &Distribution{Type: Uniform}}, "cannot have a distribution"},
		{"bad bins", "x", Def{Type: Int, Range: []any{0, 10}, Default: 0, QuantizationBins: 1}, "greater than 1"},
		{"bad meta", "x", Def{Type: Int, Range: []any{0, 10}, Default: 0, Meta: map[string]any{"a": map[string]any{}}}, "meta values"},
		{"range one element", "x", Def{Type: Float, Range: []any{0.5}, Default: 0.5}, "exactly two elements"},
		{"bad range type", "x", Def{Type: Float, Range: []any{"a", 1}, Default: 0.5}, "must be numbers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTunable(tc.tn, tc.def)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want one containing %q", err, tc.msg)
			}
		})
	}
}
