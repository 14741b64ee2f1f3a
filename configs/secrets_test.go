package configs

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestSecrets(t *testing.T) {
	s := NewSecrets()
	err := s.AddParams(map[string]any{
		"db_password":   "hunter2-pw",
		"api_token":     "tok-abcdef",
		"license":       "LIC-1",
		"pin":           int64(4711),
		"max_tokens":    int64(1000), // looks secret, but numbers only count when listed
		"short_secret":  "ab",        // too short to search for in text
		"secret_params": []any{"license", "pin"},
		"vm_name":       "vm-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"db_password": true, "api_token": true, "license": true, "pin": true, "vm_name": false, "PASSWORD": true, "ssh_priv_key": true,
	} {
		if got := s.IsSecret(name); got != want {
			t.Errorf("IsSecret(%q) = %v, want %v", name, got, want)
		}
	}
	in := "login hunter2-pw tok-abcdef LIC-1 4711 1000 ab vm-1"
	want := "login [REDACTED] [REDACTED] [REDACTED] [REDACTED] 1000 ab vm-1"
	if got := s.Redact(in); got != want {
		t.Errorf("Redact:\n got %q\nwant %q", got, want)
	}
	got := s.RedactParams(map[string]string{"short_secret": "ab", "note": "uses hunter2-pw", "x": "1"})
	if got["short_secret"] != Redacted || got["note"] != "uses [REDACTED]" || got["x"] != "1" {
		t.Errorf("RedactParams = %v", got)
	}
	err = s.RedactError(&fs.PathError{Op: "open", Path: "/x/hunter2-pw", Err: fs.ErrNotExist})
	if strings.Contains(err.Error(), "hunter2") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("RedactError = %v (still wraps: %v)", err, errors.Is(err, fs.ErrNotExist))
	}
	// A longer secret that contains a shorter one is replaced whole.
	s.AddValue("hunter2-pw-long")
	if got := s.Redact("hunter2-pw-long"); got != Redacted {
		t.Errorf("Redact(longer) = %q", got)
	}
	if err := NewSecrets().AddParams(map[string]any{"secret_params": int64(3)}); err == nil {
		t.Error("secret_params must be a list of names")
	}
	var none *Secrets
	if none.Redact("x hunter2") != "x hunter2" || !none.IsSecret("password") {
		t.Error("a nil *Secrets redacts nothing but still knows secret-looking names")
	}
}
