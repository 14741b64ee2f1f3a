package local

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFile creates a file with its parents.
func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestVerbatimText(t *testing.T) {
	first := t.TempDir()
	second := filepath.Join(t.TempDir(), "with space")
	writeFile(t, filepath.Join(first, "scripts/run.sh"), "#!/bin/sh\necho run\n", 0o755)
	writeFile(t, filepath.Join(first, "tool.py"), "print('x')\n", 0o644)
	writeFile(t, filepath.Join(first, "noexec.sh"), "#!/usr/bin/env bash -e\necho x\n", 0o644)
	writeFile(t, filepath.Join(first, "plain.sh"), "echo x\n", 0o644)
	writeFile(t, filepath.Join(second, "scripts/run.sh"), "shadowed\n", 0o755)
	writeFile(t, filepath.Join(second, "only2.sh"), "#!/bin/sh\n", 0o755)
	if err := os.MkdirAll(filepath.Join(first, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	absPy := filepath.Join(first, "tool.py")
	r := &resolver{searchPath: []string{first, second}, python: "python3"}
	q2 := shellQuote(filepath.Join(second, "only2.sh"))

	tests := []struct{ line, want string }{
		{"echo hello", "echo hello"},
		{"scripts/run.sh 'a  b' \"$X\"", first + "/scripts/run.sh 'a  b' \"$X\""},
		{"tool.py --input 'x y'", "python3 " + first + "/tool.py --input 'x y'"},
		{absPy + " a", "python3 " + absPy + " a"},
		{"only2.sh", q2},
		{"A=1 B='q r' scripts/run.sh", "A=1 B='q r' " + first + "/scripts/run.sh"},
		{"> out scripts/run.sh", "> out " + first + "/scripts/run.sh"},
		{"echo scripts/run.sh", "echo scripts/run.sh"},
		{"'scripts/run.sh'", "'scripts/run.sh'"},
		{"scripts/run.sh | only2.sh && tool.py; echo done",
			first + "/scripts/run.sh | " + q2 + " && python3 " + first + "/tool.py; echo done"},
		{"noexec.sh x", "/usr/bin/env 'bash -e' " + first + "/noexec.sh x"},
		{"plain.sh", "/bin/sh " + first + "/plain.sh"},
		{"adir", "adir"},
		{"missing.sh", "missing.sh"},
		{"scripts/*.sh", "scripts/*.sh"},
		{"echo 'unterminated && tool.py", "echo 'unterminated && tool.py"},
		{"echo $(tool.py)", "echo $(tool.py)"},
		{"cat <<EOF\ntool.py\nEOF", "cat <<EOF\ntool.py\nEOF"},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.line), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.verbatimText(tc.line)); diff != "" {
				t.Errorf("verbatimText (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":            "''",
		"/a/b-c_d.py": "/a/b-c_d.py",
		"/a b":        "'/a b'",
		"it's":        `'it'\''s'`,
		"$(x)":        "'$(x)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestReadShebang(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		content, interp, arg string
		ok                   bool
	}{
		{"#!/bin/sh\n", "/bin/sh", "", true},
		{"#! /usr/bin/env  python3 -u \nx", "/usr/bin/env", "python3 -u", true},
		{"#!/bin/bash", "/bin/bash", "", true},
		{"echo\n", "", "", false},
		{"#!\n", "", "", false},
		{"", "", "", false},
	}
	for i, tc := range tests {
		p := filepath.Join(dir, fmt.Sprint(i))
		writeFile(t, p, tc.content, 0o644)
		interp, arg, ok := readShebang(p)
		if interp != tc.interp || arg != tc.arg || ok != tc.ok {
			t.Errorf("readShebang(%q) = %q, %q, %t; want %q, %q, %t", tc.content, interp, arg, ok, tc.interp, tc.arg, tc.ok)
		}
	}
}
