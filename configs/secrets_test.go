package configs

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/capture"
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

// TestSecretCutByTruncation: captured output keeps its first and last
// bytes around a marker. A secret that straddles either cut is not kept
// in part: what is visible of it is redacted too (max_output_bytes 1024:
// 512 bytes of head, 512 of tail).
func TestSecretCutByTruncation(t *testing.T) {
	const secret = "Sup3rS3cretPassw0rdABCDE" + "Z" // 25 characters
	s := NewSecrets()
	if err := s.AddParams(map[string]any{"db_password": secret}); err != nil {
		t.Fatal(err)
	}
	pad := func(n int) string { return strings.Repeat(".", n) }
	for name, out := range map[string]string{
		// 490 bytes, then the secret across the head's end at 512.
		"head": pad(490) + secret + pad(3000),
		// The secret across the tail's start (the last 512 bytes).
		"tail": pad(3000) + secret + pad(490),
		// Both, and a whole secret in the tail.
		"both": pad(500) + secret + pad(3000) + secret + pad(100) + secret + pad(480),
	} {
		c := capture.Limit(1024)
		_, _ = c.Write([]byte(out))
		got := s.Redact(c.String())
		for k := 2; k <= len(secret); k++ {
			for i := 0; i+k <= len(secret); i++ {
				if strings.Contains(got, secret[i:i+k]) {
					t.Fatalf("%s: %d characters of the secret kept (%q):\n%s", name, k, secret[i:i+k], got)
				}
			}
		}
		if !strings.Contains(got, Redacted) || !strings.Contains(got, "bytes of output omitted") {
			t.Errorf("%s: %q", name, got)
		}
	}
	// Text without a cut, or with a cut away from any secret, is left as
	// it is (the padding around the marker is not touched).
	c := capture.Limit(64)
	_, _ = c.Write([]byte(pad(200)))
	if got := s.Redact(c.String()); got != c.String() {
		t.Errorf("a cut without a secret changed: %q", got)
	}
}

// TestGuessedSecretValues: a parameter whose name only looks secret has
// secret text, not a switch or a count: ssh_insecure_ignore_host_key
// "true" must not blank every "true" out of captured output. Listed
// parameters (secret_params) keep their short values and numbers secret.
func TestGuessedSecretValues(t *testing.T) {
	s := NewSecrets()
	err := s.AddParams(map[string]any{
		"ssh_insecure_ignore_host_key": "true",
		"verify_token":                 "False",
		"max_tokens":                   "409600",
		"api_key":                      "null",
		"short_password":               "abc12",
		"db_password":                  "hunter2-pw",
		"pin":                          "4711",
		"secret_params":                []any{"pin"},
	})
	if err != nil {
		t.Fatal(err)
	}
	in := "constrtrue true False 409600 null abc12 hunter2-pw 4711"
	want := "constrtrue true False 409600 null abc12 [REDACTED] [REDACTED]"
	if got := s.Redact(in); got != want {
		t.Errorf("Redact:\n got %q\nwant %q", got, want)
	}
	// Written under their names, they are still redacted.
	if got := s.RedactValue("ssh_insecure_ignore_host_key", "true"); got != Redacted {
		t.Errorf("RedactValue = %q", got)
	}
	for v, want := range map[string]bool{"true": false, " TRUE ": false, "1e6": false, "-12.5": false, "None": false,
		"abcde": false, "abcdef": true, "secret-1": true} {
		if got := GuessedSecretValue(v); got != want {
			t.Errorf("GuessedSecretValue(%q) = %v, want %v", v, got, want)
		}
	}
}
