package schemas

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
)

// ValidationError lists every problem found in one config document.
type ValidationError struct {
	Problems []*source.Error
}

// Error returns the problems, one per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so that errors.As can reach a *source.Error.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// compiled holds the embedded schema documents, added to one compiler, and
// the root schema of each kind, compiled on first use: a process pays only
// for the kinds it validates (a run needs a few of the ten; the unified
// schema alone costs as much as all the others).
type compiled struct {
	raw  map[string]any // canonical file URL -> parsed schema document
	decl sync.Map       // schema location -> *declared

	mu    sync.Mutex // guards comp and roots
	comp  *jsonschema.Compiler
	roots map[Kind]*jsonschema.Schema
}

var (
	loadOnce  sync.Once
	loadedSet *compiled
	loadErr   error
)

// load returns the schema set, reading the embedded files once.
func load() (*compiled, error) {
	loadOnce.Do(func() { loadedSet, loadErr = newCompiled() })
	return loadedSet, loadErr
}

// noNetwork refuses every URL that was not added as an embedded resource.
type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not embedded (schemas are never fetched)", url)
}

// newCompiled parses every embedded schema file and adds it to a compiler.
func newCompiled() (*compiled, error) {
	c := &compiled{roots: map[Kind]*jsonschema.Schema{}, raw: map[string]any{}}
	c.comp = jsonschema.NewCompiler()
	c.comp.DefaultDraft(jsonschema.Draft2020)
	c.comp.UseLoader(noNetwork{})
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("schema file %s: %w", p, err)
		}
		url := CanonicalPrefix + p
		if m, ok := doc.(map[string]any); !ok || m["$id"] != url {
			return fmt.Errorf("schema file %s: $id must be %q", p, url)
		}
		c.raw[url] = doc
		return c.comp.AddResource(url, doc)
	})
	if err != nil {
		return nil, fmt.Errorf("schemas: %w", err)
	}
	return c, nil
}

// root returns the compiled root schema of a kind, compiling it (and the
// schemas it references) the first time.
func (c *compiled) root(k Kind) (*jsonschema.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.roots[k]; ok {
		return s, nil
	}
	url := k.SchemaURL()
	if url == "" {
		return nil, fmt.Errorf("schemas: unknown config kind %q", k)
	}
	s, err := c.comp.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schemas: compile %s: %w", k, err)
	}
	c.roots[k] = s
	return s, nil
}

// compileAll reads and compiles every schema (tests and benchmarks).
func compileAll() (*compiled, error) {
	c, err := newCompiled()
	if err != nil {
		return nil, err
	}
	for _, k := range Kinds() {
		if _, err := c.root(k); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Preload compiles the schemas of the given kinds now (for instance in the
// background while a program does other work), so that their first
// Validate does not wait for it.
func Preload(kinds ...Kind) error {
	c, err := load()
	if err != nil {
		return err
	}
	for _, k := range kinds {
		if _, err := c.root(k); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks doc against the schema of the given kind. It returns nil,
// or a *ValidationError listing every problem with its location. An unknown
// kind, or schemas that fail to compile (a build defect), give a plain error.
//
// For Unified, the verdict is the unified schema's; when it rejects a config
// whose kind DetectKind can tell, the problems reported are those of that
// kind's schema (they are more specific than "matches none of ...").
func Validate(kind Kind, doc *source.Doc) error {
	c, err := load()
	if err != nil {
		return err
	}
	return c.check(kind, doc)
}

func (c *compiled) check(kind Kind, doc *source.Doc) error {
	sch, err := c.root(kind)
	if err != nil {
		return err
	}
	if doc == nil || doc.Root == nil {
		return &ValidationError{Problems: []*source.Error{doc.Errorf(nil, "empty config document")}}
	}
	if probs := nonFinite(doc, doc.Root, nil); len(probs) > 0 {
		return &ValidationError{Problems: probs}
	}
	probs := c.validate(sch, doc)
	if len(probs) == 0 {
		return nil
	}
	if kind == Unified {
		switch k := detect(doc, true); {
		case k != Unified:
			alt, err := c.root(k)
			if err != nil {
				return err
			}
			if alt := c.validate(alt, doc); len(alt) > 0 {
				probs = alt
			}
		case doc.Root.Get("class") == nil && isObject(doc.Root.Get("config")):
			// Only class-based configs have a "config" object.
			probs = []*source.Error{doc.Errorf(nil, "missing required property \"class\"")}
		}
	}
	return &ValidationError{Problems: probs}
}

// validate runs one schema and turns its error tree into located problems.
func (c *compiled) validate(sch *jsonschema.Schema, doc *source.Doc) []*source.Error {
	err := sch.Validate(doc.Root.Value())
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return []*source.Error{doc.Errorf(nil, "schema validation failed: %v", err)}
	}
	r := reducer{c: c, doc: doc}
	leaves := finish(r.reduce(verr), c, &r)
	out := make([]*source.Error, 0, len(leaves))
	seen := map[string]bool{}
	for _, l := range leaves {
		id := source.Pointer(l.loc) + "\x00" + l.msg
		if seen[id] {
			continue
		}
		seen[id] = true
		if l.atKey {
			out = append(out, doc.KeyErrorf(l.loc, "%s", l.msg))
		} else {
			out = append(out, doc.Errorf(l.loc, "%s", l.msg))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Msg < b.Msg
	})
	return out
}

// nonFinite reports NaN and ±Infinity numbers (valid JSON5, but not JSON
// values a schema can reason about).
func nonFinite(doc *source.Doc, n *json5.Node, path []string) []*source.Error {
	switch n.Kind {
	case json5.Number:
		if math.IsNaN(n.Float) || math.IsInf(n.Float, 0) {
			word := "NaN"
			if math.IsInf(n.Float, 1) {
				word = "Infinity"
			} else if math.IsInf(n.Float, -1) {
				word = "-Infinity"
			}
			return []*source.Error{doc.Errorf(path, "%s is not allowed here: config values must be finite numbers", word)}
		}
	case json5.Array:
		var out []*source.Error
		for i, e := range n.Elems {
			out = append(out, nonFinite(doc, e, appendPath(path, strconv.Itoa(i)))...)
		}
		return out
	case json5.Object:
		var out []*source.Error
		for _, m := range n.Members {
			out = append(out, nonFinite(doc, m.Value, appendPath(path, m.Key))...)
		}
		return out
	}
	return nil
}

func isObject(n *json5.Node) bool { return n != nil && n.Kind == json5.Object }

func appendPath(path []string, tok ...string) []string {
	out := make([]string, 0, len(path)+len(tok))
	return append(append(out, path...), tok...)
}
