package schemas

import (
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
)

// DetectKind tells which kind of config doc is, trying in order:
//
//  1. "$schema": a URL or path ending in /schemas/<file>, where <file> is one
//     of the root schema files (e.g. /schemas/environments/environment-schema.json;
//     mlos_bench's canonical URLs and paths to files written by Export both
//     qualify). A "$schema" that is not a string or names no known schema is
//     an error.
//  2. A "class" member: an environments, optimizers, schedulers, services or
//     storage class name (mlos_bench.* or bench.*) gives that kind; any other
//     class gives unified.
//  3. Unmistakable structure: a member that is an object with "params" or
//     "cost" (a covariant tunable group) -> tunable-params; "services" holding
//     objects -> service, holding paths -> cli; a CLI-only key (config_path,
//     environment, optimizer, scheduler, storage, globals, tunable_values,
//     log_file, log_level, teardown, random_init) -> cli.
//  4. The file name (doc.File), for .json, .jsonc and .json5 files:
//     *.mlos.json[c] -> unified (as schemastore maps them); then the folder
//     the file is in: tunable-values/ -> tunable-values, cli/ -> cli,
//     tunables/ -> tunable-params, globals/ or experiments/ -> globals; then
//     the name: "tunable-values" or "tunable_values" -> tunable-values, a
//     "cli" word -> cli, a "tunables" word, "tunable-params" or
//     "tunable_params" -> tunable-params, a "global"/"globals" word or a
//     name starting with "experiment" -> globals.
//  5. A flat map of scalars and lists of scalars (the typed globals
//     optimization_targets and tunable_params_map allowed) -> globals. A
//     tunable-values file looks the same: name it *tunable-values* or give
//     it a "$schema".
//  6. Anything else -> unified, whose validation then explains what is wrong.
//
// Structure comes before the file name because names mislead more often
// than structure does (mlos_bench's own test cases include a CLI config
// named invalid-tunable-params-map-items.jsonc); the name is what tells
// globals and tunable-values files apart.
//
// The root of a config must be an object; anything else is an error.
func DetectKind(doc *source.Doc) (Kind, error) {
	if doc == nil || doc.Root == nil {
		return "", doc.Errorf(nil, "empty config document")
	}
	if doc.Root.Kind != json5.Object {
		return "", doc.Errorf(nil, "a config must be a JSON object, not %s", article(doc.Root.Kind))
	}
	if v := doc.Root.Get("$schema"); v != nil {
		if v.Kind != json5.String {
			return "", doc.Errorf([]string{"$schema"}, "\"$schema\" must be a string")
		}
		if k, ok := kindFromSchemaURL(v.Str); ok {
			return k, nil
		}
		var known []string
		for _, k := range Kinds() {
			known = append(known, "/schemas/"+rootFiles[k])
		}
		return "", doc.Errorf([]string{"$schema"},
			"unknown \"$schema\": expected a URL or path ending in one of %s", strings.Join(known, ", "))
	}
	return detect(doc, false), nil
}

// detect applies rules 2-6 of DetectKind, plus rule 1 when "$schema" names
// a kind other than unified. With structureOnly set the file name is not
// looked at (Validate uses this to pick the kind whose problems explain a
// failed unified validation).
func detect(doc *source.Doc, structureOnly bool) Kind {
	if doc == nil || doc.Root == nil || doc.Root.Kind != json5.Object {
		return Unified
	}
	root := doc.Root
	if v := root.Get("$schema"); v != nil && v.Kind == json5.String {
		if k, ok := kindFromSchemaURL(v.Str); ok && k != Unified {
			return k
		}
	}
	if k, ok := strongStructure(root); ok {
		return k
	}
	if !structureOnly {
		if k, ok := kindFromFileName(doc.File); ok {
			return k
		}
	}
	if flat(root) {
		return Globals
	}
	return Unified
}

func kindFromSchemaURL(s string) (Kind, bool) {
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	for _, k := range Kinds() {
		if strings.HasSuffix(s, "/schemas/"+rootFiles[k]) {
			return k, true
		}
	}
	return "", false
}

func kindFromFileName(file string) (Kind, bool) {
	if file == "" {
		return "", false
	}
	p := strings.ToLower(filepath.ToSlash(file))
	base := path.Base(p)
	ext := path.Ext(base)
	if ext != ".json" && ext != ".jsonc" && ext != ".json5" {
		return "", false
	}
	name := strings.TrimSuffix(base, ext)
	if strings.HasSuffix(name, ".mlos") && ext != ".json5" {
		return Unified, true
	}
	words := strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	switch path.Base(path.Dir(p)) {
	case "tunable-values", "tunable_values":
		return TunableValues, true
	case "cli":
		return CLI, true
	case "tunables", "tunable-params", "tunable_params":
		return TunableParams, true
	case "globals", "experiments":
		return Globals, true
	}
	switch {
	case strings.Contains(name, "tunable-values") || strings.Contains(name, "tunable_values"):
		return TunableValues, true
	case slices.Contains(words, "cli"):
		return CLI, true
	case slices.Contains(words, "tunables") || strings.Contains(name, "tunable-params") || strings.Contains(name, "tunable_params"):
		return TunableParams, true
	case slices.Contains(words, "globals") || slices.Contains(words, "global") || strings.HasPrefix(name, "experiment"):
		return Globals, true
	case slices.Contains(words, "thresholds"):
		return Thresholds, true
	}
	return "", false
}

// isThresholds recognizes a bench ci thresholds file: a "metrics" object
// whose members are objects holding max_increase or max_decrease.
func isThresholds(root *json5.Node) bool {
	m := root.Get("metrics")
	if m == nil || m.Kind != json5.Object || len(m.Members) == 0 {
		return false
	}
	for _, e := range m.Members {
		if e.Value.Kind != json5.Object || (e.Value.Get("max_increase") == nil && e.Value.Get("max_decrease") == nil) {
			return false
		}
	}
	return true
}

// cliOnlyKeys appear in CLI configs and are not plausible globals.
// teardown and random_init are options of the launcher that never become
// globals (mlos_bench's argparse gives them defaults).
var cliOnlyKeys = []string{"config_path", "environment", "optimizer", "scheduler", "storage", "globals", "tunable_values", "log_file", "log_level", "teardown", "random_init"}

// strongStructure applies rules 2 and 3 of DetectKind.
func strongStructure(root *json5.Node) (Kind, bool) {
	if c := root.Get("class"); c != nil {
		if c.Kind == json5.String {
			parts := strings.Split(c.Str, ".")
			for _, p := range []struct {
				word string
				kind Kind
			}{{"environments", Environment}, {"optimizers", Optimizer}, {"schedulers", Scheduler}, {"services", Service}, {"storage", Storage}, {"engines", Engine}} {
				if slices.Contains(parts, p.word) {
					return p.kind, true
				}
			}
		}
		return Unified, true
	}
	if isThresholds(root) {
		return Thresholds, true
	}
	for _, m := range root.Members {
		if v := m.Value; v.Kind == json5.Object && (v.Get("params") != nil || v.Get("cost") != nil) {
			return TunableParams, true
		}
	}
	if s := root.Get("services"); s != nil && s.Kind == json5.Array {
		objects, strs := 0, 0
		for _, e := range s.Elems {
			switch e.Kind {
			case json5.Object:
				objects++
			case json5.String:
				strs++
			}
		}
		switch {
		case objects == len(s.Elems):
			return Service, true
		case strs == len(s.Elems):
			return CLI, true
		}
	}
	for _, k := range cliOnlyKeys {
		if root.Get(k) != nil {
			return CLI, true
		}
	}
	return "", false
}

// flat tells whether every member is a scalar or a list of scalars (or one
// of the typed globals).
func flat(root *json5.Node) bool {
	for _, m := range root.Members {
		switch m.Key {
		case "$schema", "optimization_targets", "tunable_params_map":
			continue
		}
		switch v := m.Value; v.Kind {
		case json5.Object:
			return false
		case json5.Array:
			for _, e := range v.Elems {
				if e.Kind == json5.Object || e.Kind == json5.Array {
					return false
				}
			}
		}
	}
	return true
}

func article(k json5.Kind) string {
	switch k {
	case json5.Array, json5.Object:
		return "an " + k.String()
	case json5.Null:
		return "null"
	}
	return "a " + k.String()
}
