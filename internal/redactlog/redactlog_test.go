package redactlog

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
)

func TestHandler(t *testing.T) {
	s := configs.NewSecrets()
	var b bytes.Buffer
	log := slog.New(New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}), s))
	// Added after the logger was made: still redacted.
	if err := s.AddParams(map[string]any{"db_password": "hunter2-pw"}); err != nil {
		t.Fatal(err)
	}
	log.With("env", "e hunter2-pw").WithGroup("g").Info("connecting with hunter2-pw",
		"password", "p1", "line", "psql -p hunter2-pw", "err", errors.New("bad hunter2-pw"),
		"api_token", 12345, "ssh_insecure_ignore_host_key", true,
		slog.Group("sub", "x", "hunter2-pw"))
	out := b.String()
	if strings.Contains(out, "hunter2") || strings.Contains(out, "p1") || strings.Contains(out, "12345") {
		t.Errorf("log holds a secret:\n%s", out)
	}
	for _, want := range []string{"connecting with [REDACTED]", "g.password=[REDACTED]", "g.api_token=[REDACTED]", "g.ssh_insecure_ignore_host_key=true", "g.sub.x=[REDACTED]"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

type nilStringer struct{ s *string }

func (n *nilStringer) String() string { return *n.s }

// A value whose String method panics does not take the handler down.
func TestHandlerPanickingStringer(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(New(slog.NewTextHandler(&b, nil), configs.NewSecrets()))
	var n *nilStringer
	log.Info("x", "v", n)
	if !strings.Contains(b.String(), "msg=x") {
		t.Errorf("log: %s", b.String())
	}
}
