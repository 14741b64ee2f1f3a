package clilog

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
)

// Every level on the terminal has the same shape: "bench: ", an optional
// level tag, the message, then key=value pairs.
func TestTerminal(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(Terminal(&b, slog.LevelDebug))
	log.Debug("looking", "n", 1)
	log.Info("experiment started", "id", "E1")
	log.With("trial", 3).Warn("trial failed; retrying it", "reason", "exit status 1")
	log.WithGroup("ssh").Error("cannot connect", "err", errors.New("connection refused"), "host", "")
	want := `bench: debug: looking n=1
bench: experiment started id=E1
bench: warning: trial failed; retrying it trial=3 reason="exit status 1"
bench: error: cannot connect ssh.err="connection refused" ssh.host=""
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	// Warnings and errors share the format of bench's other lines.
	line := regexp.MustCompile(`^bench: ((warning|error|debug): )?\S.*$`)
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if !line.MatchString(l) || strings.Contains(l, "level=") || strings.Contains(l, "time=") {
			t.Errorf("line %q is not in the terminal format", l)
		}
	}
}

func TestTerminalLevel(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(Terminal(&b, slog.LevelWarn))
	log.Info("hidden")
	log.Warn("shown")
	if b.String() != "bench: warning: shown\n" {
		t.Errorf("got %q", b.String())
	}
}

// The log file's lines read like mlos_bench's: the regular expression is
// the one mlos_bench's own launcher tests match its log file with, with
// bench's source file in place of run.py.
func TestFile(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(File(&b, slog.LevelInfo))
	log.Info("Final score: {'score': 67.4}")
	log.Warn("retrying", "trial", 2)
	log.Debug("hidden")
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got:\n%s", b.String())
	}
	date := `\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}`
	if re := regexp.MustCompile(`^` + date + ` clilog_test\.go:\d+ TestFile INFO Final score: \{'score': 67\.4\}\s*$`); !re.MatchString(lines[0]) {
		t.Errorf("line %q does not match %s", lines[0], re)
	}
	if re := regexp.MustCompile(`^` + date + ` clilog_test\.go:\d+ TestFile WARNING retrying trial=2$`); !re.MatchString(lines[1]) {
		t.Errorf("line %q does not match %s", lines[1], re)
	}
}

type nilStringer struct{ s *string }

func (n *nilStringer) String() string { return *n.s }

func TestPanickingValue(t *testing.T) {
	var b bytes.Buffer
	var n *nilStringer
	slog.New(Terminal(&b, nil)).Info("x", "v", n)
	if b.String() != "bench: x v=!PANIC\n" {
		t.Errorf("got %q", b.String())
	}
}
