// Package check validates config files and folders for `bench validate`:
// syntax, the schema of each file's kind, and what a schema cannot see —
// include files that do not exist, cyclic includes, tunable groups
// referenced but not defined, duplicate tunable names across groups and
// defaults outside their range.
package check

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/tunables"
)

// Problem is one finding.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Path    string `json:"path,omitempty"` // JSON pointer
	Kind    string `json:"kind,omitempty"` // the config kind the file was checked as
	Message string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Report is the outcome of a check.
type Report struct {
	Files    []FileResult `json:"files"`
	Problems []Problem    `json:"problems"`
	// Warnings do not make a file invalid: a key given twice in one
	// object (accepted, the last value wins, as in mlos_bench).
	Warnings []Problem `json:"warnings"`
}

// FileResult tells how one file was checked.
type FileResult struct {
	File  string `json:"file"`
	Kind  string `json:"kind,omitempty"`
	Valid bool   `json:"valid"`
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Checker validates configs.
type Checker struct {
	// Kind forces the kind of every file ("" = detect).
	Kind schemas.Kind
	// ConfigPaths are extra folders to resolve includes in (after the
	// working folder and each file's own ancestors, before the built-in
	// configs).
	ConfigPaths []string
}

// IsConfigFile reports whether a file name looks like a config.
func IsConfigFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".json" || ext == ".jsonc" || ext == ".json5"
}

// Run checks the given files and folders (recursively).
func (c *Checker) Run(paths []string) (*Report, error) {
	files, err := collect(paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{Problems: []Problem{}, Warnings: []Problem{}}
	type parsed struct {
		doc  *source.Doc
		kind schemas.Kind
	}
	docs := map[string]parsed{}
	for _, f := range files {
		data, err := configs.ReadFile(f)
		if err != nil {
			rep.add(Problem{File: f, Message: err.Error()})
			rep.Files = append(rep.Files, FileResult{File: f})
			continue
		}
		doc, err := source.Parse(f, data)
		if err != nil {
			rep.addErr(f, "", err)
			rep.Files = append(rep.Files, FileResult{File: f})
			continue
		}
		rep.Warnings = append(rep.Warnings, duplicateKeys(f, data)...)
		kind := c.Kind
		if kind == "" {
			if kind, err = schemas.DetectKind(doc); err != nil {
				rep.addErr(f, "", err)
				rep.Files = append(rep.Files, FileResult{File: f})
				continue
			}
		}
		docs[f] = parsed{doc, kind}
	}
	// Environments included by other environments get their tunables from
	// their parents: only check tunable references from the roots.
	included := map[string]bool{}
	for f, p := range docs {
		if p.kind != schemas.Environment {
			continue
		}
		l := c.loader(f)
		for _, inc := range strList(p.doc.Root.Get("config").Get("include_children")) {
			if r := l.Resolve(inc); !strings.HasPrefix(r, configs.BuiltinPrefix) {
				included[filepath.Clean(r)] = true
			}
		}
	}
	for _, f := range files {
		p, ok := docs[f]
		if !ok {
			continue
		}
		before := len(rep.Problems)
		if err := schemas.Validate(p.kind, p.doc); err != nil {
			rep.addErr(f, string(p.kind), err)
		} else {
			c.deep(rep, f, p.doc, p.kind, !included[filepath.Clean(f)])
		}
		rep.Files = append(rep.Files, FileResult{File: f, Kind: string(p.kind), Valid: len(rep.Problems) == before})
	}
	return rep, nil
}

func (r *Report) add(p Problem) { r.Problems = append(r.Problems, p) }

// duplicateKeys warns about each key given again in the same object, with
// the places of both.
func duplicateKeys(file string, data []byte) []Problem {
	_, dups, err := json5.ParseDuplicates(data)
	if err != nil {
		return nil
	}
	out := make([]Problem, 0, len(dups))
	for _, d := range dups {
		out = append(out, Problem{
			File: file, Line: d.Again.Line, Col: d.Again.Col,
			Path: pointer(append(slices.Clone(d.Path), d.Key)),
			Message: fmt.Sprintf("warning: duplicate key %q, first at %s:%d:%d; the last value wins (as in mlos_bench)",
				d.Key, file, d.First.Line, d.First.Col),
		})
	}
	return out
}

// pointer writes a path as a JSON pointer.
func pointer(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// addErr turns an error into problems, keeping positions.
func (r *Report) addErr(file, kind string, err error) {
	var ve *schemas.ValidationError
	if errors.As(err, &ve) {
		for _, p := range ve.Problems {
			r.addSource(file, kind, p)
		}
		return
	}
	var se *source.Error
	if errors.As(err, &se) {
		r.addSource(file, kind, se)
		return
	}
	r.add(Problem{File: file, Kind: kind, Message: err.Error()})
}

func (r *Report) addSource(file, kind string, se *source.Error) {
	p := Problem{File: se.File, Line: se.Pos.Line, Col: se.Pos.Col, Path: se.Path, Kind: kind, Message: se.Msg}
	if se.Err != nil {
		if p.Message != "" {
			p.Message += ": "
		}
		p.Message += se.Err.Error()
	}
	if p.File == "" {
		p.File = file
	}
	r.add(p)
}

// collect expands folders into their config files, sorted.
func collect(paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if !st.IsDir() {
			if !seen[p] {
				out = append(out, p)
				seen[p] = true
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			if IsConfigFile(d.Name()) && !seen[path] {
				out = append(out, path)
				seen[path] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// loader resolves includes of file: the working folder, the file's
// ancestors (configs usually name includes relative to a config root above
// them), the extra config paths, then the built-in configs.
func (c *Checker) loader(file string) *configs.Loader {
	var dirs []string
	abs, err := filepath.Abs(file)
	if err == nil {
		for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
			dirs = append(dirs, d)
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	dirs = append(dirs, c.ConfigPaths...)
	l, err := configs.NewLoader(nil, dirs...)
	if err != nil {
		l, _ = configs.NewLoader(nil)
	}
	return l
}

func strList(n *json5.Node) []string {
	if n == nil {
		return nil
	}
	if n.Kind == json5.String {
		return []string{n.Str}
	}
	var out []string
	for _, e := range n.Elems {
		if e.Kind == json5.String {
			out = append(out, e.Str)
		}
	}
	return out
}

// deep runs the checks a schema cannot do.
func (c *Checker) deep(rep *Report, file string, doc *source.Doc, kind schemas.Kind, root bool) {
	l := c.loader(file)
	switch kind {
	case schemas.TunableParams:
		if _, err := tunables.ParseParams(doc.At()); err != nil {
			rep.addErr(file, string(kind), err)
		}
	case schemas.TunableValues:
		if _, err := tunables.ParseValues(doc.At()); err != nil {
			rep.addErr(file, string(kind), err)
		}
	case schemas.Environment:
		w := &envWalker{c: c, rep: rep, kind: string(kind)}
		tun, _ := tunables.New()
		w.env(l, doc.At(), tun, []string{absPath(file)}, root)
	case schemas.Optimizer:
		for i, inc := range strList(doc.Root.Get("include_tunables")) {
			checkInclude(rep, l, doc, []string{"include_tunables", fmt.Sprint(i)}, inc, configs.KindTunableParams)
		}
	case schemas.CLI:
		for _, key := range []string{"environment", "optimizer", "scheduler", "storage"} {
			if n := doc.Root.Get(key); n != nil && n.Kind == json5.String {
				checkInclude(rep, withCLIPaths(l, doc), doc, []string{key}, n.Str, configs.Kind(key))
			}
		}
		for _, key := range []string{"services", "globals", "tunable_values"} {
			kinds := map[string]configs.Kind{"services": configs.KindService, "globals": configs.KindGlobals, "tunable_values": configs.KindTunableValues}
			n := doc.Root.Get(key)
			if n != nil && n.Kind == json5.String {
				checkInclude(rep, withCLIPaths(l, doc), doc, []string{key}, n.Str, kinds[key])
			}
			for i, inc := range strList(n) {
				if n.Kind == json5.Array {
					checkInclude(rep, withCLIPaths(l, doc), doc, []string{key, fmt.Sprint(i)}, inc, kinds[key])
				}
			}
		}
	}
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// withCLIPaths adds a CLI config's config_path entries to the loader.
func withCLIPaths(l *configs.Loader, doc *source.Doc) *configs.Loader {
	paths := strList(doc.Root.Get("config_path"))
	if len(paths) == 0 {
		return l
	}
	nl, err := l.WithPaths(paths...)
	if err != nil {
		return l
	}
	return nl
}

// checkInclude reports an include that cannot be found; for files that
// exist, it checks their schema too.
func checkInclude(rep *Report, l *configs.Loader, doc *source.Doc, path []string, spec string, kind configs.Kind) *source.Doc {
	if configs.IsInline(spec) {
		return nil
	}
	resolved := l.Resolve(spec)
	data, err := configs.ReadFile(resolved)
	if err != nil {
		msg := fmt.Sprintf("included file %q not found (searched the working folder, the folders above %s, the config paths and the built-in configs)", spec, filepath.Base(doc.File))
		if hint := configs.UnshippedHint(spec); hint != "" {
			msg += "; " + hint
		}
		e := doc.Errorf(path, "%s", msg)
		rep.addSource(doc.File, "", e)
		return nil
	}
	inc, err := source.Parse(resolved, data)
	if err != nil {
		rep.addErr(resolved, string(kind), err)
		return nil
	}
	if err := schemas.Validate(schemas.Kind(kind), inc); err != nil {
		rep.addErr(resolved, string(kind), err)
		return nil
	}
	return inc
}

// envWalker follows an environment tree the way the builder does,
// accumulating tunables and detecting cycles.
type envWalker struct {
	c    *Checker
	rep  *Report
	kind string
}

func (w *envWalker) env(l *configs.Loader, ref source.Ref, tun *tunables.Groups, chain []string, root bool) {
	node := ref.Node()
	if node == nil {
		return
	}
	doc := ref.Doc
	for i, inc := range strList(node.Get("include_services")) {
		checkInclude(w.rep, l, doc, append(append([]string(nil), ref.Path...), "include_services", fmt.Sprint(i)), inc, configs.KindService)
	}
	for i, inc := range strList(node.Get("include_tunables")) {
		p := append(append([]string(nil), ref.Path...), "include_tunables", fmt.Sprint(i))
		tdoc := checkInclude(w.rep, l, doc, p, inc, configs.KindTunableParams)
		if tdoc == nil {
			continue
		}
		g, err := tunables.ParseParams(tdoc.At())
		if err != nil {
			w.rep.addErr(tdoc.File, string(configs.KindTunableParams), err)
			continue
		}
		merged := tun.Copy()
		if err := merged.Merge(g); err != nil {
			w.rep.addSource(doc.File, w.kind, doc.Errorf(p, "%v", err))
			continue
		}
		tun = merged
	}
	cfg := node.Get("config")
	if root {
		known := map[string]bool{}
		for _, g := range tun.Groups() {
			known[g.Name] = true
		}
		for i, g := range strList(cfg.Get("tunable_params")) {
			if strings.HasPrefix(g, "$") || known[g] {
				continue
			}
			names := make([]string, 0, len(known))
			for k := range known {
				names = append(names, k)
			}
			sort.Strings(names)
			msg := fmt.Sprintf("tunable group %q is referenced but not defined by any included tunables file", g)
			if len(names) > 0 {
				msg += " (defined: " + strings.Join(names, ", ") + ")"
			}
			p := append(append([]string(nil), ref.Path...), "config", "tunable_params", fmt.Sprint(i))
			w.rep.addSource(doc.File, w.kind, doc.Errorf(p, "%s", msg))
		}
	}
	if cfg == nil {
		return
	}
	if children := cfg.Get("children"); children != nil && children.Kind == json5.Array {
		for i := range children.Elems {
			w.env(l, ref.Child("config").Child("children").Index(i), tun, chain, root)
		}
	}
	for i, inc := range strList(cfg.Get("include_children")) {
		p := append(append([]string(nil), ref.Path...), "config", "include_children", fmt.Sprint(i))
		resolved := l.Resolve(inc)
		cycle := false
		for _, f := range chain {
			if f == resolved {
				w.rep.addSource(doc.File, w.kind, doc.Errorf(p, "cyclic include: %s", strings.Join(append(append([]string(nil), chain...), resolved), " -> ")))
				cycle = true
			}
		}
		if cycle {
			continue
		}
		cdoc := checkInclude(w.rep, l, doc, p, inc, configs.KindEnvironment)
		if cdoc == nil {
			continue
		}
		w.env(l, cdoc.At(), tun, append(append([]string(nil), chain...), resolved), root)
	}
}
