package sshpool

import (
	"strings"
	"testing"
)

func TestPoolEnv(t *testing.T) {
	hosts := []any{map[string]any{"host": "u@h"}}
	cfg, err := ParseConfig(map[string]any{"hosts": hosts, "env": map[string]any{
		"AWS_REGION": "eu-west-1", "AWS_SHARED_CREDENTIALS_FILE": "/home/u/.aws/creds", "ODD": "it's $HOME"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "export AWS_REGION=eu-west-1\nexport AWS_SHARED_CREDENTIALS_FILE=/home/u/.aws/creds\nexport ODD='it'\\''s $HOME'\n"
	if got := envLines(cfg.Env); got != want {
		t.Errorf("envLines:\n%s\nwant\n%s", got, want)
	}
	for env, msg := range map[string]string{
		"AWS_SECRET_ACCESS_KEY": "looks like a secret",
		"DB_PASSWORD":           "looks like a secret",
		"BENCH_X":               "is set by bench",
		"1BAD":                  "is not an environment variable name",
		"A-B":                   "is not an environment variable name",
	} {
		_, err := ParseConfig(map[string]any{"hosts": hosts, "env": map[string]any{env: "v"}})
		if err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\"v\"") {
			t.Errorf("env %s: %v, want %q (without the value)", env, err, msg)
		}
	}
}
