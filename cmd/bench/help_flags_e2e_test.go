package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
)

// flagRe finds --name tokens in text; the name ends at the first
// character that cannot be part of an option name.
var flagRe = regexp.MustCompile(`--[a-z][a-z0-9_-]*[a-z0-9]`)

// TestRunHelpListsEveryFlag: README says `bench <command> --help`
// documents every flag, so every option the "bench run" section of the
// README names (and --config_id, documented further down) is in
// bench run --help, and so is every option bench run registers.
func TestRunHelpListsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\n### bench run\n")
	if start < 0 {
		t.Fatal("README has no '### bench run' section")
	}
	section := text[start+1:]
	if end := strings.Index(section[len("### bench run"):], "\n### "); end >= 0 {
		section = section[:len("### bench run")+end]
	}
	r := runBench(t, t.TempDir(), "run", "--help")
	if r.code != 0 {
		t.Fatalf("bench run --help: exit %d: %s", r.code, r.stderr)
	}
	inHelp := map[string]bool{}
	for _, f := range flagRe.FindAllString(r.stdout, -1) {
		inHelp[f] = true
	}
	// Not options: a placeholder, the misspelt global of the warning
	// example, and another command's option.
	notOptions := map[string]bool{"--name": true, "--max_sugestions": true, "--experiment": true}
	want := append(flagRe.FindAllString(section, -1), "--config_id", "--max_config_file_size", "--max_results_file_size")
	for _, f := range want {
		if !notOptions[f] && !inHelp[f] {
			t.Errorf("README documents %s for bench run, but bench run --help does not list it", f)
		}
	}
	for _, o := range configs.Options {
		for _, n := range o.Names() {
			if strings.HasPrefix(n, "--") && !inHelp[n] {
				t.Errorf("bench run accepts %s, but bench run --help does not list it", n)
			}
		}
	}
}
