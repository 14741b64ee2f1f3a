package decode

import (
	"math"
	"testing"
	"time"
)

func TestBool(t *testing.T) {
	tests := []struct {
		in     any
		want   bool
		wantOK bool
	}{
		{true, true, true}, {false, false, true},
		{"yes", true, true}, {"Y", true, true}, {" t ", true, true}, {"TRUE", true, true}, {"on", true, true}, {"1", true, true},
		{"no", false, true}, {"N", false, true}, {"f", false, true}, {"False", false, true}, {"OFF", false, true}, {"0", false, true},
		{int64(1), true, true}, {int64(0), false, true}, {int64(2), true, true}, {1, true, true},
		{0.0, false, true}, {0.5, true, true}, {math.NaN(), false, false},
		{"", false, false}, {"maybe", false, false}, {"2", false, false}, {nil, false, false}, {[]any{}, false, false},
	}
	for _, tc := range tests {
		got, ok := Bool(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Bool(%#v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestInt(t *testing.T) {
	tests := []struct {
		in     any
		want   int64
		wantOK bool
	}{
		{int64(3), 3, true}, {3, 3, true}, {3.0, 3, true}, {-2.0, -2, true},
		{"3", 3, true}, {" 42 ", 42, true}, {"-7", -7, true}, {"3.0", 3, true}, {"1e3", 1000, true},
		{3.5, 0, false}, {"3.5", 0, false}, {"three", 0, false}, {"", 0, false}, {true, 0, false}, {nil, 0, false},
		{math.Inf(1), 0, false}, {1e300, 0, false},
	}
	for _, tc := range tests {
		got, ok := Int(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Int(%#v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestFloat(t *testing.T) {
	tests := []struct {
		in     any
		want   float64
		wantOK bool
	}{
		{1.5, 1.5, true}, {int64(3), 3, true}, {3, 3, true}, {"3", 3, true}, {" 2.5 ", 2.5, true}, {"1e-3", 0.001, true},
		{"inf", math.Inf(1), true},
		{math.NaN(), 0, false}, {"nan", 0, false}, {"x", 0, false}, {true, 0, false}, {nil, 0, false},
	}
	for _, tc := range tests {
		got, ok := Float(tc.in)
		if ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("Float(%#v) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestDurationOf(t *testing.T) {
	tests := []struct {
		in      any
		want    time.Duration
		wantErr bool
	}{
		{nil, 0, false}, {"", 0, false}, {"  ", 0, false},
		{int64(90), 90 * time.Second, false}, {90, 90 * time.Second, false}, {1.5, 1500 * time.Millisecond, false},
		{"90", 90 * time.Second, false}, {" 90s ", 90 * time.Second, false}, {"1h30m", 90 * time.Minute, false}, {"250ms", 250 * time.Millisecond, false},
		{int64(-1), 0, true}, {"-5s", 0, true}, {"soon", 0, true}, {true, 0, true}, {math.NaN(), 0, true},
	}
	for _, tc := range tests {
		got, err := DurationOf(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("DurationOf(%#v) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
