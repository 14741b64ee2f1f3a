// Package check validates config files and folders for `bench validate`:
// syntax, the schema of each file's kind, then (unless SchemaOnly) what a
// run checks before its first trial, with the run's own code
// (launcher.Validate and launcher.ValidateFile): every include found,
// every class known and able to run, every config decoded by its class,
// required args given a value, tunables and their groups. Files that are
// not bench configs (JSON Schema documents, Azure ARM templates) are
// skipped and counted.
package check

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/services"
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
	// object (accepted, the last value wins, as in mlos_bench), required
	// args of an environment checked alone that only a run's globals can
	// give.
	Warnings []Problem `json:"warnings"`
	// Skipped are the files that are not bench configs.
	Skipped []Skipped `json:"skipped"`

	seen   map[string]bool // problems and warnings reported, to report each once
	raised int             // problems found, repeats included
}

// Skipped is a file that is not a bench config, and why.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
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
	// Globals are globals files, as bench run's --globals: they give
	// values to required args (and override config keys) as in a run.
	Globals []string
	// SchemaOnly checks syntax and each file against its kind's schema,
	// nothing more (includes are not followed: for editors and
	// pre-commit hooks, where include paths resolve only at run time).
	SchemaOnly bool
	// Validate is the schema check the loader applies to included files
	// (default: schemas.Validate).
	Validate configs.ValidateFunc
}

// IsConfigFile reports whether a file name looks like a config.
func IsConfigFile(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".json" || ext == ".jsonc" || ext == ".json5"
}

// Run checks the given files and folders (recursively).
func (c *Checker) Run(paths []string) (*Report, error) {
	return c.RunContext(context.Background(), paths)
}

// RunContext is Run under ctx.
func (c *Checker) RunContext(ctx context.Context, paths []string) (*Report, error) {
	if c.Validate == nil {
		c.Validate = func(kind configs.Kind, doc *source.Doc) error { return schemas.Validate(schemas.Kind(kind), doc) }
	}
	files, err := collect(paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{Problems: []Problem{}, Warnings: []Problem{}, Skipped: []Skipped{}}
	type parsed struct {
		doc  *source.Doc
		kind schemas.Kind
	}
	docs := map[string]parsed{}
	var checked []string
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
		if reason := notAConfig(doc); reason != "" && c.Kind == "" {
			rep.Skipped = append(rep.Skipped, Skipped{File: f, Reason: reason})
			continue
		}
		rep.warn(duplicateKeys(f, data)...)
		kind := c.Kind
		if kind == "" {
			if kind, err = schemas.DetectKind(doc); err != nil {
				rep.addErr(f, "", err)
				rep.Files = append(rep.Files, FileResult{File: f})
				continue
			}
		}
		docs[f] = parsed{doc, kind}
		checked = append(checked, f)
	}
	// Environments included by other environments get their tunables and
	// args from their parents: they are checked as part of the roots.
	included := map[string]bool{}
	for f, p := range docs {
		if p.kind != schemas.Environment {
			continue
		}
		l := c.loader(f)
		for _, inc := range strList(p.doc.Root.Get("config").Get("include_children")) {
			if r := l.Resolve(inc); !strings.HasPrefix(r, configs.BuiltinPrefix) {
				included[absPath(r)] = true
			}
		}
	}
	var base *configs.Launch
	for _, f := range checked {
		p := docs[f]
		before := rep.raised
		if err := schemas.Validate(p.kind, p.doc); err != nil {
			rep.addErr(f, string(p.kind), err)
		} else if !c.SchemaOnly {
			if base == nil {
				if base, err = c.baseLaunch(); err != nil {
					return nil, err
				}
			}
			c.deep(ctx, rep, base, f, p.doc, p.kind, included[absPath(f)])
		}
		rep.Files = append(rep.Files, FileResult{File: f, Kind: string(p.kind), Valid: rep.raised == before})
	}
	rep.dropShadowed()
	if allRelative(paths) {
		rep.relativize()
	}
	return rep, nil
}

func allRelative(paths []string) bool {
	for _, p := range paths {
		if filepath.IsAbs(p) {
			return false
		}
	}
	return true
}

// relativize names the files under the working folder relative to it, as
// the paths given were (the builders name the files they reach by their
// absolute paths).
func (r *Report) relativize() {
	wd, err := os.Getwd()
	if err != nil {
		return
	}
	rel := func(p string) string {
		if !filepath.IsAbs(p) {
			return p
		}
		if q, err := filepath.Rel(wd, p); err == nil && q != ".." && !strings.HasPrefix(q, ".."+string(filepath.Separator)) {
			return q
		}
		return p
	}
	for i := range r.Problems {
		r.Problems[i].File = rel(r.Problems[i].File)
	}
	for i := range r.Warnings {
		r.Warnings[i].File = rel(r.Warnings[i].File)
	}
	for i := range r.Files {
		r.Files[i].File = rel(r.Files[i].File)
	}
}

// notAConfig tells why a JSON file is not a bench config ("" when it may
// be one): a JSON Schema document, or an Azure Resource Manager template
// or parameters file (mlos_bench's config tree has both).
func notAConfig(doc *source.Doc) string {
	root := doc.Root
	if root == nil || root.Kind != json5.Object {
		return ""
	}
	schema := ""
	if v := root.Get("$schema"); v != nil && v.Kind == json5.String {
		schema = strings.ToLower(v.Str)
	}
	switch {
	case strings.Contains(schema, "schema.management.azure.com/"):
		return "an Azure Resource Manager template or parameters file (" + root.Get("$schema").Str + ")"
	case strings.Contains(schema, "json-schema.org/"):
		return "a JSON Schema document (" + root.Get("$schema").Str + ")"
	case schema == "" && (root.Get("$defs") != nil || root.Get("definitions") != nil):
		return "a JSON Schema document (it has \"$defs\" or \"definitions\")"
	}
	return ""
}

// baseLaunch reads the globals files as bench run does (no CLI config):
// the globals every file checked alone is built with.
func (c *Checker) baseLaunch() (*configs.Launch, error) {
	l, err := configs.Prepare(&configs.Args{ConfigPaths: c.ConfigPaths, Globals: c.Globals}, c.Validate)
	if err != nil {
		return nil, fmt.Errorf("--globals: %w", err)
	}
	return l, nil
}

// add reports a problem, once: the same problem reached again (an
// included file checked on its own and through its includer) is not
// repeated.
func (r *Report) add(p Problem) {
	r.raised++
	if r.once("p", p) {
		r.Problems = append(r.Problems, p)
	}
}

var searched = regexp.MustCompile(` \(searched [^)]*\)`)

// dropShadowed removes the warnings at the place of a problem (a required
// arg that a file checked alone warns about and a CLI config using it
// makes an error).
func (r *Report) dropShadowed() {
	at := map[string]bool{}
	for _, p := range r.Problems {
		at[fmt.Sprintf("%s\x00%d\x00%d\x00%s", absPath(p.File), p.Line, p.Col, p.Path)] = true
	}
	kept := r.Warnings[:0]
	for _, w := range r.Warnings {
		if w.Line == 0 || !at[fmt.Sprintf("%s\x00%d\x00%d\x00%s", absPath(w.File), w.Line, w.Col, w.Path)] {
			kept = append(kept, w)
		}
	}
	r.Warnings = kept
}

// warn reports warnings, each once.
func (r *Report) warn(ps ...Problem) {
	for _, p := range ps {
		if r.once("w", p) {
			r.Warnings = append(r.Warnings, p)
		}
	}
}

func (r *Report) once(what string, p Problem) bool {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	// The same missing file is looked for in other folders when reached
	// from a CLI config and from its own file: one problem.
	msg := searched.ReplaceAllString(p.Message, "")
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%d\x00%s\x00%s", what, absPath(p.File), p.Line, p.Col, p.Path, msg)
	if r.seen[key] {
		return false
	}
	r.seen[key] = true
	return true
}

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
			Path:    pointer(append(slices.Clone(d.Path), d.Key)),
			Message: source.DuplicateMessage(file, d),
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

func (r *Report) addSource(file, kind string, se *source.Error) { r.add(problemOf(file, kind, se)) }

// problemOf turns a located error into a problem (file when it names
// none).
func problemOf(file, kind string, se *source.Error) Problem {
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
	return p
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
	l, err := configs.NewLoader(c.Validate, dirs...)
	if err != nil {
		l, _ = configs.NewLoader(c.Validate)
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

// deep runs what a run checks before its first trial, with the run's own
// code: a CLI config is prepared and validated as bench run --config
// would (its globals known: a required arg without a value is an error);
// any other file is checked the way a run uses a file of its kind
// (launcher.ValidateFile), with the --globals given; an environment's
// required args that nothing gives a value yet are warnings then, since
// a run's globals or command line may give them. An environment that
// another checked environment includes is checked through it.
func (c *Checker) deep(ctx context.Context, rep *Report, base *configs.Launch, file string, doc *source.Doc, kind schemas.Kind, included bool) {
	switch kind {
	case schemas.TunableParams:
		if _, err := tunables.ParseParams(doc.At()); err != nil {
			rep.addErr(file, string(kind), err)
		}
		return
	case schemas.TunableValues:
		if _, err := tunables.ParseValues(doc.At()); err != nil {
			rep.addErr(file, string(kind), err)
		}
		return
	}
	warn := func(err error) {
		var se *source.Error
		if errors.As(err, &se) {
			p := problemOf(file, string(kind), se)
			p.Message = "warning: " + p.Message
			rep.warn(p)
			return
		}
		rep.warn(Problem{File: file, Kind: string(kind), Message: "warning: " + err.Error()})
	}
	// Nothing validate prints carries a secret value (as with bench run).
	np, nw := len(rep.Problems), len(rep.Warnings)
	secrets := base.Secrets
	defer func() {
		if secrets == nil {
			return
		}
		for i := np; i < len(rep.Problems); i++ {
			rep.Problems[i].Message = secrets.Redact(rep.Problems[i].Message)
		}
		for i := nw; i < len(rep.Warnings); i++ {
			rep.Warnings[i].Message = secrets.Redact(rep.Warnings[i].Message)
		}
	}()
	switch kind {
	case schemas.CLI:
		l, err := configs.Prepare(&configs.Args{Config: absPath(file), ConfigPaths: c.ConfigPaths, Globals: c.Globals}, c.Validate)
		if err == nil {
			secrets = l.Secrets
			err = launcher.Validate(ctx, l, launcher.ValidateOptions{Warn: warn})
		}
		if err != nil {
			rep.addErr(file, string(kind), err)
		}
		return
	case schemas.Environment:
		if included {
			return
		}
	case schemas.Service, schemas.Optimizer, schemas.Scheduler, schemas.Storage, schemas.Engine:
	default:
		return
	}
	l := *base
	l.Loader = c.loader(file)
	// Each pass's warnings go to pass; those of the last pass are kept.
	pass := &Report{}
	missing := func(who string, at source.Ref, names []string) {
		e := at.Errorf("warning: %s: required args without a value: %s (a run needs them from const_args, a globals file (--globals) or the command line)", who, strings.Join(names, ", "))
		pass.warn(problemOf(file, string(kind), e))
	}
	passWarn := func(err error) {
		keep := rep
		rep = pass
		warn(err)
		rep = keep
	}
	var placeholders []Problem
	err := launcher.ValidateFile(ctx, &l, configs.Kind(kind), absPath(file), launcher.ValidateOptions{MissingArgs: missing, Warn: passWarn})
	// A value only a run's globals give, in a service an environment
	// includes, is a warning (below); the rest of the file is still
	// checked, with a placeholder for that key, so that what else a run
	// would reject shows too (its tunable groups, its children).
	for tries := 0; err != nil && tries < 8; tries++ {
		key := globalKey(err)
		var ve *schemas.ValidationError
		if key == "" || kind != schemas.Environment || !inOtherFile(err, file) || errors.Is(err, services.ErrNeedsService) || errors.As(err, &ve) {
			break
		}
		if _, given := l.Globals[key]; given {
			break
		}
		var se *source.Error
		errors.As(err, &se)
		p := problemOf(file, string(kind), se)
		p.Message = fmt.Sprintf("warning: %s (unless a run's globals give %q: check with --globals)", p.Message, key)
		placeholders = append(placeholders, p)
		l.Globals = maps.Clone(l.Globals)
		l.Globals[key] = "benchvalidate"
		pass = &Report{}
		err = launcher.ValidateFile(ctx, &l, configs.Kind(kind), absPath(file), launcher.ValidateOptions{MissingArgs: missing, Warn: passWarn})
	}
	rep.warn(placeholders...)
	rep.warn(pass.Warnings...)
	if err == nil {
		return
	}
	if errors.Is(err, services.ErrNeedsService) {
		// Checked alone, a service lacks the services a run lists
		// before it.
		var se *source.Error
		if errors.As(err, &se) {
			p := problemOf(file, string(kind), se)
			p.Message = "warning: " + p.Message + " (checked without the services a run lists before it)"
			rep.warn(p)
			return
		}
	}
	if key := globalKey(err); key != "" && (kind != schemas.Environment || inOtherFile(err, file)) {
		if _, given := base.Globals[key]; !given {
			// A run's globals override the keys a config has (as in
			// mlos_bench): a placeholder there is fine when they give it.
			var se *source.Error
			errors.As(err, &se)
			p := problemOf(file, string(kind), se)
			p.Message = fmt.Sprintf("warning: %s (unless a run's globals give %q: check with --globals)", p.Message, key)
			rep.warn(p)
			return
		}
	}
	rep.addErr(file, string(kind), err)
}

// inOtherFile tells whether a located error is in a file other than file
// (a service an environment includes).
func inOtherFile(err error, file string) bool {
	var se *source.Error
	return errors.As(err, &se) && se.File != "" && absPath(se.File) != absPath(file)
}

// configKey matches the path of a value in a class's config object.
var configKey = regexp.MustCompile(`^(?:/services/\d+)?/config/([^/]+)`)

// globalKey returns the config key a located error is about, when a
// global of that name would replace its value in a run.
func globalKey(err error) string {
	var se *source.Error
	if !errors.As(err, &se) {
		return ""
	}
	m := configKey.FindStringSubmatch(se.Path)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(strings.ReplaceAll(m[1], "~1", "/"), "~0", "~")
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
