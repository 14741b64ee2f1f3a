package pyfmt

import "testing"

func TestMetricRepr(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, "None"}, {"5", "5"}, {"67.4", "67.4"}, {"1e-5", "1e-05"}, {"2.0", "2.0"}, {"fast", "'fast'"},
		{int64(3), "3"}, {1.0, "1.0"}, {123.456, "123.456"}, {true, "True"},
	} {
		if got := MetricRepr(tc.in); got != tc.want {
			t.Errorf("MetricRepr(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got := DictRepr([]string{"score", "it's"}, []string{"1.5", "None"}); got != `{'score': 1.5, "it's": None}` {
		t.Errorf("DictRepr: %s", got)
	}
	if got := DictRepr(nil, nil); got != "{}" {
		t.Errorf("DictRepr(empty): %s", got)
	}
}
