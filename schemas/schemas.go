// Package schemas holds the JSON Schemas (draft 2020-12) of every config kind
// that bench reads — the mlos_bench kinds plus bench's own extensions — and
// validates parsed configs against them.
//
// The schema files are embedded in the binary and are never fetched over the
// network. Each file's $id lies under mlos_bench's canonical schema prefix
// (CanonicalPrefix) with the same relative path mlos_bench uses, so a config
// whose "$schema" names an mlos_bench schema URL (or any URL or path ending in
// the same /schemas/<kind path>.json suffix) maps to the embedded file.
//
// Validation errors are reported as *ValidationError: a list of problems, each
// with the config file, line, column and JSON pointer of the offending value
// (or key, for unknown properties) and a plain message.
package schemas

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
)

// CanonicalPrefix is the URL prefix of mlos_bench's published schema files.
// The embedded files use it for their $id, followed by their relative path.
const CanonicalPrefix = "https://raw.githubusercontent.com/microsoft/MLOS/main/mlos_bench/mlos_bench/config/schemas/"

// Kind is a kind of config file.
type Kind string

// The config kinds. Unified accepts any of the others: objects with a "class"
// (or with nothing but "services") must be an environment, optimizer,
// scheduler, service or storage config; anything else must be a CLI, globals,
// tunable-params or tunable-values config.
const (
	CLI           Kind = "cli"
	Globals       Kind = "globals"
	Environment   Kind = "environment"
	Service       Kind = "service"
	Optimizer     Kind = "optimizer"
	Scheduler     Kind = "scheduler"
	Storage       Kind = "storage"
	TunableParams Kind = "tunable-params"
	TunableValues Kind = "tunable-values"
	// Engine is bench's own: an execution engine config.
	Engine Kind = "engine"
	// Thresholds is bench's own: the limits of bench ci (docs/ci.md).
	Thresholds Kind = "ci-thresholds"
	Unified    Kind = "unified"
)

// rootFiles maps each kind to its root schema file, relative to FS().
var rootFiles = map[Kind]string{
	CLI:           "cli/cli-schema.json",
	Globals:       "cli/globals-schema.json",
	Environment:   "environments/environment-schema.json",
	Service:       "services/service-schema.json",
	Optimizer:     "optimizers/optimizer-schema.json",
	Scheduler:     "schedulers/scheduler-schema.json",
	Storage:       "storage/storage-schema.json",
	TunableParams: "tunables/tunable-params-schema.json",
	TunableValues: "tunables/tunable-values-schema.json",
	Engine:        "engines/engine-schema.json",
	Thresholds:    "ci/thresholds-schema.json",
	Unified:       "mlos-bench-config-schema.json",
}

// Kinds returns every kind, Unified last.
func Kinds() []Kind {
	return []Kind{CLI, Globals, Environment, Service, Optimizer, Scheduler, Storage, TunableParams, TunableValues, Engine, Thresholds, Unified}
}

// SchemaPath returns the path of the kind's root schema file inside FS() (and
// inside a directory written by Export), or "" for an unknown kind.
func (k Kind) SchemaPath() string { return rootFiles[k] }

// SchemaURL returns the canonical URL ($id) of the kind's root schema, or ""
// for an unknown kind.
func (k Kind) SchemaURL() string {
	if p := rootFiles[k]; p != "" {
		return CanonicalPrefix + p
	}
	return ""
}

//go:embed json
var embedded embed.FS

// FS returns the embedded schema files, laid out as mlos_bench lays out its
// schemas directory (e.g. "environments/environment-schema.json").
func FS() fs.FS {
	sub, err := fs.Sub(embedded, "json")
	if err != nil { // cannot happen: "json" is a valid, embedded directory
		panic(err)
	}
	return sub
}

// idLine matches the "$id" line of an embedded schema file.
var idLine = regexp.MustCompile(`(?m)^[ \t]*"\$id":[^\n]*\n`)

// Export writes every schema file below dir, keeping the relative layout, for
// editors and other tools. The "$id" of each exported file is removed so that
// the files' relative "$ref"s resolve against where they were written rather
// than against mlos_bench's published URLs (which do not hold bench's
// extensions). Existing files are overwritten; dir is created if needed.
func Export(dir string) error {
	return fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return fmt.Errorf("export schemas: %w", err)
			}
			return nil
		}
		data, err := fs.ReadFile(FS(), p)
		if err != nil {
			return fmt.Errorf("export schemas: %w", err)
		}
		data = idLine.ReplaceAll(data, nil)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("export schemas: %w", err)
		}
		return nil
	})
}

// ClassNames returns, for each JSON schema file under dir (a folder of
// FS, e.g. "services/remote/azure"), the class names its "class" property
// allows (its enum). Files without such an enum are left out.
func ClassNames(dir string) (map[string][]string, error) {
	out := map[string][]string{}
	err := fs.WalkDir(FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		data, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		var doc struct {
			Properties struct {
				Class struct {
					Enum []string `json:"enum"`
				} `json:"class"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if len(doc.Properties.Class.Enum) > 0 {
			out[p] = doc.Properties.Class.Enum
		}
		return nil
	})
	return out, err
}
