package suggest

import "testing"

func TestClosest(t *testing.T) {
	cands := []string{"chunk_kb", "level", "workers", "max_suggestions", "score", "latency"}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"chunk_kbb", "chunk_kb", true},
		{"max_sugestions", "max_suggestions", true},
		{"scor", "score", true},
		{"Score", "score", true},
		{"levle", "level", true}, // a swap
		{"throughput", "", false},
		{"x", "", false},
		{"level", "", false}, // an exact match is no suggestion
	} {
		got, ok := Closest(tc.name, cands)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if h := Hint("scor", cands); h != ` (did you mean "score"?)` {
		t.Errorf("Hint = %q", h)
	}
	if h := Hint("zzz", cands); h != "" {
		t.Errorf("Hint = %q", h)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"chunk_kbb", "chunk_kb", 1}} {
		if d := distance(tc.a, tc.b); d != tc.d {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
