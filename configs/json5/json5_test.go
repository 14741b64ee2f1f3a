package json5

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseValues(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"plain json", `{"a": [1, 2.5, "x", true, false, null]}`, map[string]any{"a": []any{int64(1), 2.5, "x", true, false, nil}}},
		{"comments", "// lead\n{/* c */\"a\": 1 // tail\n}", map[string]any{"a": int64(1)}},
		{"trailing commas", `{"a": [1, 2,], "b": 3,}`, map[string]any{"a": []any{int64(1), int64(2)}, "b": int64(3)}},
		{"unquoted keys", `{a: 1, $b_2: 2, ünï: 3}`, map[string]any{"a": int64(1), "$b_2": int64(2), "ünï": int64(3)}},
		{"single quotes", `{'a': 'it\'s "x"'}`, map[string]any{"a": `it's "x"`}},
		{"hex", `[0x1F, -0xa, +0X10]`, []any{int64(31), int64(-10), int64(16)}},
		{"decimal points", `[.5, 5., +1.5, -0.25, 1e3, 2E-2]`, []any{0.5, 5.0, 1.5, -0.25, 1000.0, 0.02}},
		{"escapes", `"a\tb\nc\u00e9\x41\v\0\/"`, "a\tb\nc\u00e9A\v\x00/"},
		{"surrogate pair", `"\ud83d\ude00"`, "\U0001F600"},
		{"line continuation", "'a\\\nb'", "ab"},
		{"identity escape", `'\q'`, "q"},
		{"extra whitespace", "\ufeff\u00a0{\u2028a\u3000:\v1\f}", map[string]any{"a": int64(1)}},
		{"duplicate keys last wins", `{a: 1, b: 2, a: 3}`, map[string]any{"a": int64(3), "b": int64(2)}},
		{"big int stays float", `18446744073709551616`, 1.8446744073709552e19},
		{"block comment with stars", "/** x **/ 1", int64(1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, n.Value()); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestSpecialNumbers(t *testing.T) {
	n, err := Parse([]byte(`[Infinity, -Infinity, +Infinity, NaN, -NaN]`))
	if err != nil {
		t.Fatal(err)
	}
	got := n.Value().([]any)
	if !math.IsInf(got[0].(float64), 1) || !math.IsInf(got[1].(float64), -1) || !math.IsInf(got[2].(float64), 1) {
		t.Errorf("infinities: %v", got)
	}
	if !math.IsNaN(got[3].(float64)) || !math.IsNaN(got[4].(float64)) {
		t.Errorf("NaN: %v", got)
	}
}

func TestDuplicateKeyKeepsFirstPlace(t *testing.T) {
	n, err := Parse([]byte(`{a: 1, b: 2, a: 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, n.Keys()); diff != "" {
		t.Error(diff)
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct {
		in        string
		line, col int
		msg       string
	}{
		{"", 1, 1, "empty document"},
		{"{\n  \"a\": 1\n  \"b\": 2\n}", 3, 3, "expected ',' or '}'"},
		{"{\"a\": }", 1, 7, "expected a value"},
		{"[1, 2", 1, 1, "unterminated array"},
		{"{a: 1", 1, 1, "unterminated object"},
		{"\"abc", 1, 1, "unterminated string"},
		{"'a\nb'", 1, 3, "line break inside a string"},
		{"/* open", 1, 1, "unterminated /* comment"},
		{"{a b}", 1, 4, "expected ':'"},
		{"01", 1, 2, "leading zeros"},
		{"1e", 1, 3, "exponent without digits"},
		{"0x", 1, 3, "without digits"},
		{"12abc", 1, 3, "in number"},
		{"[1] 2", 1, 5, "after the top-level value"},
		{"undefined", 1, 1, "unexpected word \"undefined\""},
		{"\"\\1\"", 1, 3, "invalid escape"},
		{"\"\\x4g\"", 1, 5, "invalid hexadecimal digit"},
		{"{1: 2}", 1, 2, "expected a property name"},
		{"\r\n\r\n  ]", 3, 3, "expected a value"},
		{".", 1, 1, "invalid number"},
		{"'\xff'", 1, 2, "invalid UTF-8"},
	}
	for _, tc := range tests {
		_, err := Parse([]byte(tc.in))
		se, ok := err.(*SyntaxError)
		if !ok {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.in, err)
			continue
		}
		if se.Pos.Line != tc.line || se.Pos.Col != tc.col || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("Parse(%q) = %d:%d %q, want %d:%d containing %q", tc.in, se.Pos.Line, se.Pos.Col, se.Msg, tc.line, tc.col, tc.msg)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	_, err := Parse([]byte(strings.Repeat("[", MaxDepth+5)))
	if err == nil || !strings.Contains(err.Error(), "nesting deeper") {
		t.Fatalf("got %v, want a nesting error", err)
	}
}

func TestPositionsAndLocate(t *testing.T) {
	src := "{\n  // comment\n  \"outer\": {\n    inner: [10, 'x'],\n  },\n}"
	n, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	node, keyPos, ok := n.Locate([]string{"outer", "inner", "1"})
	if !ok || node.Str != "x" || node.Pos.Line != 4 || node.Pos.Col != 17 {
		t.Errorf("Locate = %+v ok=%v", node, ok)
	}
	if keyPos != nil {
		t.Errorf("array element has no key position, got %v", keyPos)
	}
	node, keyPos, ok = n.Locate([]string{"outer", "inner"})
	if !ok || keyPos == nil || keyPos.Line != 4 || keyPos.Col != 5 || node.Pos.Col != 12 {
		t.Errorf("Locate inner = %+v key %v", node.Pos, keyPos)
	}
	node, _, ok = n.Locate([]string{"outer", "missing"})
	if ok || node.Pos.Line != 3 {
		t.Errorf("missing path should stop at outer: %+v %v", node.Pos, ok)
	}
}

// sameJSON compares a value decoded by encoding/json with the parser's,
// numbers as float64. Its coverage does not depend on map iteration order
// (unlike json.Marshal, which sorts keys, or cmp): the fuzzer's
// minimization then sees the same coverage for the same input and does
// not stall.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y
		case int64:
			return x == float64(y)
		}
		return false
	}
	return a == b
}

// FuzzParse checks that the parser never panics, that errors carry sane
// positions and that whatever plain JSON accepts, JSON5 accepts with the
// same value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x", true, null]}`, `{a: 'b', c: [0x10, .5, +1, Infinity,],}`, "// c\n/* d */ 1", `"\u00e9\ud83d\ude00\x41"`, `[[[]]]`, `{"a":{"b":{"c":-1e-3}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			se, ok := err.(*SyntaxError)
			if !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if se.Pos.Line < 1 || se.Pos.Col < 1 || se.Pos.Offset > len(data) {
				t.Fatalf("bad error position %+v for %q", se.Pos, data)
			}
		} else {
			_ = n.Value()
		}
		var std any
		// JSON5 rejects invalid UTF-8 that encoding/json silently replaces.
		if utf8.Valid(data) && json.Unmarshal(data, &std) == nil {
			if err != nil {
				t.Fatalf("valid JSON %q rejected: %v", data, err)
			}
			if !sameJSON(std, n.Value()) {
				t.Fatalf("value mismatch for %q: json %v, json5 %v", data, std, n.Value())
			}
		}
	})
}

func TestParseDuplicates(t *testing.T) {
	src := "{\n  a: 1,\n  b: {x: 1, 'x': 2, x: 3},\n  c: [{k: 1, k: 2}],\n  a: 4,\n}"
	n, dups, err := ParseDuplicates([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []Duplicate{
		{Path: []string{"b"}, Key: "x", First: Pos{Line: 3, Col: 7}, Again: Pos{Line: 3, Col: 13}},
		{Path: []string{"b"}, Key: "x", First: Pos{Line: 3, Col: 7}, Again: Pos{Line: 3, Col: 21}},
		{Path: []string{"c", "0"}, Key: "k", First: Pos{Line: 4, Col: 8}, Again: Pos{Line: 4, Col: 14}},
		{Path: []string{}, Key: "a", First: Pos{Line: 2, Col: 3}, Again: Pos{Line: 5, Col: 3}},
	}
	if diff := cmp.Diff(want, dups, cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Pos{}, "Offset")); diff != "" {
		t.Errorf("duplicates (-want +got):\n%s", diff)
	}
	// The last value wins, in the first key's place, as Parse does.
	plain, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plain.Value(), n.Value()); diff != "" || n.Get("a").Int != 4 || n.Get("b").Get("x").Int != 3 {
		t.Errorf("values differ from Parse's:\n%s", diff)
	}
	if _, _, err := ParseDuplicates([]byte("{a: 1, a:")); err == nil {
		t.Error("a syntax error must be reported")
	}
}
