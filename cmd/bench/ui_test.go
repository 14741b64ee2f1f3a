package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUIToken: actions off loopback need the token file; on loopback
// they do not; a token file given is always read.
func TestUIToken(t *testing.T) {
	tokFile := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tokFile, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		listen, file string
		actions      bool
		want, err    string
	}{
		{"127.0.0.1:8421", "", true, "", ""},
		{"[::1]:0", "", true, "", ""},
		{"localhost:9000", "", true, "", ""},
		{"0.0.0.0:8421", "", false, "", ""},
		{"0.0.0.0:8421", "", true, "", "needs --token-file"},
		{":8421", "", true, "", "needs --token-file"},
		{"10.1.2.3:8421", tokFile, true, "s3cret", ""},
		{"127.0.0.1:0", tokFile, true, "s3cret", ""},
	} {
		got, err := uiToken(tc.listen, tc.file, tc.actions)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s actions=%v: error %v, want %q", tc.listen, tc.actions, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s actions=%v file=%q: %q, %v; want %q", tc.listen, tc.actions, tc.file, got, err, tc.want)
		}
	}
}

// The ui_actions global is read by the config converters' rule, as every
// other boolean setting: "yes" or "true" from a globals file turns the
// dashboard's actions on (before, only a JSON true did); anything else
// leaves them off.
func TestUIActionsFollowsTheConverters(t *testing.T) {
	for v, want := range map[any]bool{true: true, "yes": true, "true": true, " On ": true, int64(1): true, "1": true,
		false: false, "no": false, "0": false, "maybe": false, nil: false} {
		if got := uiActions(map[string]any{"ui_actions": v}); got != want {
			t.Errorf("ui_actions %#v: actions %v, want %v", v, got, want)
		}
	}
	if uiActions(map[string]any{}) {
		t.Error("no ui_actions: actions on")
	}
}
