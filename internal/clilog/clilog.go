// Package clilog holds bench's two log formats, as slog handlers:
//
//   - Terminal, the one human format of everything bench tells on the
//     terminal: "bench: MESSAGE key=value ...", with "warning: ",
//     "error: " or "debug: " after "bench: " for those levels (INFO has
//     no tag, as bench's other terminal lines).
//   - File, the format of --log_file, which is mlos_bench's: "DATE TIME,MS
//     FILE:LINE FUNCTION LEVEL MESSAGE key=value ...", with Python's level
//     names (DEBUG, INFO, WARNING, ERROR), so that what greps mlos_bench's
//     log files greps bench's. FILE:LINE and FUNCTION are bench's own
//     source location.
package clilog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Terminal returns the terminal handler: lines written to w at level and
// above.
func Terminal(w io.Writer, level slog.Leveler) slog.Handler {
	return &handler{out: &output{w: w}, level: level, file: false}
}

// File returns the log file handler (mlos_bench's format).
func File(w io.Writer, level slog.Leveler) slog.Handler {
	return &handler{out: &output{w: w}, level: level, file: true}
}

// output serializes the writes of a handler and the handlers derived from
// it.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

type handler struct {
	out    *output
	level  slog.Leveler
	file   bool
	prefix string // preformatted attributes from WithAttrs (" k=v ...")
	group  string // the open group's dotted prefix ("g." or "")
}

// Enabled implements slog.Handler.
func (h *handler) Enabled(_ context.Context, l slog.Level) bool {
	lv := slog.LevelInfo
	if h.level != nil {
		lv = h.level.Level()
	}
	return l >= lv
}

// Handle implements slog.Handler.
func (h *handler) Handle(_ context.Context, r slog.Record) error {
	var b bytes.Buffer
	if h.file {
		t := r.Time
		if t.IsZero() {
			t = time.Now()
		}
		b.WriteString(t.Format("2006-01-02 15:04:05"))
		fmt.Fprintf(&b, ",%03d ", t.Nanosecond()/int(time.Millisecond))
		file, line, fn := source(r.PC)
		fmt.Fprintf(&b, "%s:%d %s %s ", file, line, fn, PythonLevel(r.Level))
	} else {
		b.WriteString("bench: ")
		if tag := terminalTag(r.Level); tag != "" {
			b.WriteString(tag + ": ")
		}
	}
	b.WriteString(r.Message)
	b.WriteString(h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	b.WriteByte('\n')
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	_, err := h.out.w.Write(b.Bytes())
	return err
}

// WithAttrs implements slog.Handler.
func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	var b bytes.Buffer
	for _, a := range as {
		appendAttr(&b, h.group, a)
	}
	c := *h
	c.prefix += b.String()
	return &c
}

// WithGroup implements slog.Handler.
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group += name + "."
	return &c
}

// PythonLevel names l as Python's logging does.
func PythonLevel(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	default:
		return "DEBUG"
	}
}

func terminalTag(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return ""
	default:
		return "debug"
	}
}

// source returns the file's base name, line and the function's short name
// of pc ("-", 0, "-" when unknown).
func source(pc uintptr) (string, int, string) {
	if pc == 0 {
		return "-", 0, "-"
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	if f.File == "" {
		return "-", 0, "-"
	}
	fn := f.Function
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		fn = fn[i+1:]
	}
	if fn == "" {
		fn = "-"
	}
	return filepath.Base(f.File), f.Line, fn
}

func appendAttr(b *bytes.Buffer, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, x := range a.Value.Group() {
			appendAttr(b, g, x)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(group + a.Key)
	b.WriteByte('=')
	b.WriteString(Quote(valueText(a.Value)))
}

func valueText(v slog.Value) (s string) {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindTime:
		return v.Time().Format(time.RFC3339)
	case slog.KindAny:
		defer func() {
			if recover() != nil {
				s = "!PANIC"
			}
		}()
		switch x := v.Any().(type) {
		case error:
			return x.Error()
		case fmt.Stringer:
			return x.String()
		default:
			return fmt.Sprint(x)
		}
	default:
		return v.String()
	}
}

// Quote returns s as is when it reads as one word, else Go-quoted.
func Quote(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
