package main

import (
	"bytes"
	"strings"
	"testing"
)

// -noise-search local runs the noise-aware methods with the local search;
// anything but global or local is refused.
func TestNoiseSearchFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "1", "-budget", "20", "-noise-search", "local"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"noise-aware search: local", "naive/confirm"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	err := run([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "1", "-budget", "20", "-noise-search", "nearby"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-noise-search") {
		t.Errorf("-noise-search nearby: error %v", err)
	}
	out.Reset()
	if err := run([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "2", "-budget", "20", "-noise-search", "local", "-noise-methods", "aware"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "branin σ=10% aware") || !strings.Contains(out.String(), "per seed") || strings.Contains(out.String(), "naive") {
		t.Errorf("-noise-methods aware:\n%s", out.String())
	}
	err = run([]string{"-noise", "0.1", "-funcs", "branin", "-seeds", "1", "-budget", "20", "-noise-methods", "lucky"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-noise-methods") {
		t.Errorf("-noise-methods lucky: error %v", err)
	}
}
