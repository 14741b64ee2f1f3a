package passive

import (
	"bytes"
	"io"
	"sync"
)

// Console is the passive runner's terminal output: a writer that keeps a
// prompt at the bottom. Whatever is written through it (the trials, the
// messages, bench's per-trial progress lines) goes on a line of its own,
// after which the prompt is shown again. It is safe for concurrent use.
type Console struct {
	mu     sync.Mutex
	w      io.Writer
	prompt string
	shown  bool // the prompt is the last thing on the screen (no newline after it)
}

// NewConsole returns a console writing to w.
func NewConsole(w io.Writer) *Console { return &Console{w: w} }

// consoleOf returns w as a console, wrapping it when it is not one.
func consoleOf(w io.Writer) *Console {
	if c, ok := w.(*Console); ok {
		return c
	}
	return NewConsole(w)
}

// Write writes p on lines of their own, then shows the prompt again once
// p ends a line.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	if c.shown {
		c.shown = false
		if _, err := io.WriteString(c.w, "\n"); err != nil {
			return 0, err
		}
	}
	n, err := c.w.Write(p)
	if err == nil && c.prompt != "" && bytes.HasSuffix(p, []byte("\n")) {
		_, err = io.WriteString(c.w, c.prompt)
		c.shown = err == nil
	}
	return n, err
}

// SetPrompt sets the prompt ("": none) shown after the next line written
// (or by Show).
func (c *Console) SetPrompt(prompt string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prompt = prompt
}

// Show shows the prompt when it is not on screen.
func (c *Console) Show() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prompt == "" || c.shown {
		return
	}
	_, err := io.WriteString(c.w, c.prompt)
	c.shown = err == nil
}

// Entered tells that the person ended a line at the prompt (the terminal
// echoed the newline): the prompt is no longer on screen.
func (c *Console) Entered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shown = false
}
