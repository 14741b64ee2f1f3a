// Package redactlog keeps secrets out of logs: a slog.Handler that
// replaces secret values in messages and attributes, and the values of
// attributes whose key names a secret, before passing records on.
package redactlog

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/benchtune/bench/configs"
)

// Handler wraps another handler.
type Handler struct {
	next    slog.Handler
	secrets *configs.Secrets
}

// New returns next with secrets redacted; the set may grow while it is in
// use (each record is redacted with the values known then).
func New(next slog.Handler, secrets *configs.Secrets) *Handler {
	return &Handler{next: next, secrets: secrets}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.secrets.Redact(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.attr(a)
	}
	return &Handler{next: h.next.WithAttrs(red), secrets: h.secrets}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), secrets: h.secrets}
}

func (h *Handler) attr(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	switch a.Value.Kind() {
	case slog.KindGroup:
		g := a.Value.Group()
		red := make([]slog.Attr, len(g))
		for i, x := range g {
			red[i] = h.attr(x)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindString:
		return slog.String(a.Key, h.secrets.RedactValue(a.Key, a.Value.String()))
	case slog.KindAny:
		s, ok := text(a.Value.Any())
		if !ok {
			return a
		}
		if red := h.secrets.RedactValue(a.Key, s); red != s {
			return slog.String(a.Key, red)
		}
		return a
	default:
		if h.secrets.IsSecret(a.Key) && a.Value.Kind() != slog.KindBool {
			return slog.String(a.Key, configs.Redacted)
		}
		return a
	}
}

// text renders an attribute value as the handler would; ok is false when
// that panics (a nil pointer's String method, say), and the value is then
// left to the next handler, which reports it.
func text(v any) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	switch x := v.(type) {
	case error:
		return x.Error(), true
	case fmt.Stringer:
		return x.String(), true
	default:
		return fmt.Sprint(x), true
	}
}
