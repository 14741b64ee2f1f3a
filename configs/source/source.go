// Package source ties parsed JSON5 documents to their files so that every
// error about a config names the file, line, column and JSON path.
package source

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/internal/safeio"
)

// Doc is one parsed config document.
type Doc struct {
	// File is the path the document was read from, or a label such as
	// "<command line>" for inline JSON.
	File string
	Root *json5.Node
}

// Parse parses data as JSON5; a syntax error is returned as *Error.
func Parse(file string, data []byte) (*Doc, error) {
	root, err := json5.Parse(data)
	if err != nil {
		var se *json5.SyntaxError
		if errors.As(err, &se) {
			return nil, &Error{File: file, Pos: se.Pos, Msg: "syntax error: " + se.Msg}
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return &Doc{File: file, Root: root}, nil
}

// ReadFile reads and parses a JSON5 file: a regular file of at most 16
// MiB (see internal/safeio).
func ReadFile(path string) (*Doc, error) {
	data, err := safeio.ReadFile(context.Background(), path, safeio.Limit{What: "config file"}, safeio.DefaultConfigLimit)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read config", Err: err}
	}
	return Parse(path, data)
}

// Error is a problem with a config, located as precisely as possible.
type Error struct {
	File string
	Pos  json5.Pos // Line 0 when unknown
	// Path is the JSON pointer of the offending value ("" for the whole
	// document), e.g. "/config/setup/0".
	Path string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Pos.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Pos.Line, e.Pos.Col)
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString("at " + e.Path + ": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Pointer renders path tokens as a JSON pointer (RFC 6901).
func Pointer(path []string) string {
	if len(path) == 0 {
		return ""
	}
	var b strings.Builder
	for _, t := range path {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// SplitPointer is the inverse of Pointer.
func SplitPointer(ptr string) []string {
	if ptr == "" || ptr == "/" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		p = strings.ReplaceAll(p, "~1", "/")
		parts[i] = strings.ReplaceAll(p, "~0", "~")
	}
	return parts
}

// Errorf builds an Error for the value at path (object keys and array
// indexes). If the path does not fully resolve, the deepest existing value
// is used for the position.
func (d *Doc) Errorf(path []string, format string, args ...any) *Error {
	e := &Error{Path: Pointer(path), Msg: fmt.Sprintf(format, args...)}
	if d == nil {
		return e
	}
	e.File = d.File
	if d.Root != nil {
		node, _, _ := d.Root.Locate(path)
		e.Pos = node.Pos
	}
	return e
}

// KeyErrorf is like Errorf but points at the key of the last path element
// when it is an object member (for "unknown property" style errors).
func (d *Doc) KeyErrorf(path []string, format string, args ...any) *Error {
	e := d.Errorf(path, format, args...)
	if d != nil && d.Root != nil {
		if _, kp, ok := d.Root.Locate(path); ok && kp != nil {
			e.Pos = *kp
		}
	}
	return e
}

// At returns a Ref to the value at path, for passing a location down to code
// that reports errors about part of a document.
func (d *Doc) At(path ...string) Ref { return Ref{Doc: d, Path: append([]string(nil), path...)} }

// Ref points at a value inside a document.
type Ref struct {
	Doc  *Doc
	Path []string
}

// Node returns the node the reference points at, or nil.
func (r Ref) Node() *json5.Node {
	if r.Doc == nil || r.Doc.Root == nil {
		return nil
	}
	n, _, ok := r.Doc.Root.Locate(r.Path)
	if !ok {
		return nil
	}
	return n
}

// Child returns a reference to a member or element below r.
func (r Ref) Child(key string) Ref {
	return Ref{Doc: r.Doc, Path: append(append([]string(nil), r.Path...), key)}
}

// Index returns a reference to an array element below r.
func (r Ref) Index(i int) Ref { return r.Child(strconv.Itoa(i)) }

// Errorf reports an error about the referenced value.
func (r Ref) Errorf(format string, args ...any) *Error {
	if r.Doc == nil {
		return &Error{Path: Pointer(r.Path), Msg: fmt.Sprintf(format, args...)}
	}
	return r.Doc.Errorf(r.Path, format, args...)
}

// DuplicateMessage is the warning about a key given twice in one object
// of file (bench validate and bench run say the same): the last value
// wins, as in mlos_bench.
func DuplicateMessage(file string, d json5.Duplicate) string {
	return fmt.Sprintf("warning: duplicate key %q, first at %s:%d:%d; the last value wins (as in mlos_bench)",
		d.Key, file, d.First.Line, d.First.Col)
}

// DuplicateWarning is DuplicateMessage with the place of the later key
// and its JSON path: "env.jsonc:5:5: /config/run: warning: duplicate key
// ...".
func DuplicateWarning(file string, d json5.Duplicate) string {
	return fmt.Sprintf("%s:%d:%d: %s: %s", file, d.Again.Line, d.Again.Col,
		Pointer(append(append([]string(nil), d.Path...), d.Key)), DuplicateMessage(file, d))
}
