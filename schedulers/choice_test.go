package schedulers

import (
	"fmt"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
)

// modeCase is a scheduler config's globals and what decoding them gives:
// a mode key's value, or an error naming want.
type modeCase struct {
	globals map[string]any
	want    string
}

// checkModeKey decodes each case's globals (with the noise keys) and
// checks key's value, got(c), for the good cases and the error for the
// bad ones.
func checkModeKey(t *testing.T, key string, got func(Config) string, good, bad []modeCase) {
	t.Helper()
	for _, tc := range good {
		c, err := DecodeConfig("", nil, tc.globals, source.Ref{}, "exp", true)
		if err != nil || got(c) != tc.want {
			t.Errorf("%v: %s %q, error %v; want %q", tc.globals, key, got(c), err, tc.want)
		}
	}
	for _, tc := range bad {
		if _, err := DecodeConfig("", nil, tc.globals, source.Ref{}, "exp", true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one naming %q", tc.globals, err, tc.want)
		}
	}
}

// TestDecodeChoice: a choice is a string, trimmed, lower-cased only when
// asked, one of the allowed values; anything else is reported once with
// the key's name and what it takes.
func TestDecodeChoice(t *testing.T) {
	for _, tc := range []struct {
		v    any
		fold bool
		want string
		ok   bool
	}{
		{" b ", false, "b", true},
		{"B", false, "", false},
		{" B", true, "b", true},
		{"", false, "", false},
		{int64(1), true, "", false},
		{nil, true, "", false},
	} {
		var msgs []string
		bad := func(format string, args ...any) { msgs = append(msgs, fmt.Sprintf(format, args...)) }
		got, ok := decodeChoice(tc.v, "k", "x", tc.fold, bad, "a", "b")
		wantMsgs := 0
		if !tc.ok {
			wantMsgs = 1
		}
		if got != tc.want || ok != tc.ok || len(msgs) != wantMsgs || (wantMsgs == 1 && !strings.HasPrefix(msgs[0], "k must be x, got ")) {
			t.Errorf("%#v fold %v: %q %v (errors %q), want %q %v", tc.v, tc.fold, got, ok, msgs, tc.want, tc.ok)
		}
	}
}
