package launcher_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/launcher"
	"github.com/benchtune/bench/optimizers"
	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"
)

// docExample is one JSON, JSONC or JSON5 code block of the docs.
type docExample struct {
	file string
	line int // of the opening fence
	text string
	// fragment: the block is marked <!-- fragment --> on the line before
	// its fence: a piece of a config (some keys, an excerpt), or not a
	// bench config at all. It is not checked.
	fragment bool
}

var fence = regexp.MustCompile("^```(json|jsonc|json5)\\s*$")

// docExamples reads every JSON(C/5) code block of README.md and docs/*.md.
func docExamples(t *testing.T) []docExample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join("..", "README.md")}, files...)
	var out []docExample
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		var (
			cur      *docExample
			prev     string
			n        int
			inOther  bool
			fragment = func(s string) bool { return strings.TrimSpace(s) == "<!-- fragment -->" }
		)
		for sc.Scan() {
			n++
			line := sc.Text()
			switch {
			case cur != nil && strings.TrimSpace(line) == "```":
				out = append(out, *cur)
				cur = nil
			case cur != nil:
				cur.text += line + "\n"
			case inOther && strings.HasPrefix(strings.TrimSpace(line), "```"):
				inOther = false
			case inOther:
			case fence.MatchString(strings.TrimSpace(line)):
				rel, _ := filepath.Rel("..", f)
				cur = &docExample{file: rel, line: n, fragment: fragment(prev)}
			case strings.HasPrefix(strings.TrimSpace(line), "```"):
				inOther = true
			}
			if strings.TrimSpace(line) != "" {
				prev = line
			}
		}
		if cur != nil {
			t.Fatalf("%s:%d: unterminated code block", f, cur.line)
		}
	}
	return out
}

// incomplete recognizes the load errors of an example that depends on
// files or tunable groups defined elsewhere (an included file that is not
// there, a group that a parent environment's tunables define).
var incomplete = regexp.MustCompile(`config file not found|unknown covariant group`)

// docGlobals are the globals the examples are loaded with (the docs fill
// these from globals files or the command line).
var docGlobals = map[string]any{
	"experiment_id": "DOCS", "trial_id": int64(1), "trial_runner_id": int64(1),
	// docs/cloud.md: the Azure Files account key comes from the globals.
	"storageAccountKey": base64.StdEncoding.EncodeToString([]byte("docs-account-key")),
}

// TestDocExamples checks every config example of the README and docs/:
// it parses as JSON5, its kind is detected, it is valid against bench's
// schema for that kind, and bench loads it (decodes it and builds what it
// describes: tunables, environments with their services, services,
// optimizers, schedulers, storage, globals and CLI configs), so that the
// docs and the schemas and code cannot drift apart. A block that is only
// an excerpt is marked with <!-- fragment --> on the line before its
// fence.
func TestDocExamples(t *testing.T) {
	examples := docExamples(t)
	if len(examples) < 30 {
		t.Fatalf("only %d examples found", len(examples))
	}
	// The tunables examples of each page, for that page's environments
	// that include a tunables file the page shows (README: the
	// "db-memory" group and the environment that includes it).
	pageTunables := map[string]map[string]any{}
	for _, ex := range examples {
		if ex.fragment {
			continue
		}
		doc, err := source.Parse(ex.file, []byte(ex.text))
		if err != nil {
			continue
		}
		if k, err := schemas.DetectKind(doc); err == nil && k == schemas.TunableParams {
			if pageTunables[ex.file] == nil {
				pageTunables[ex.file] = map[string]any{}
			}
			maps.Copy(pageTunables[ex.file], doc.Root.Value().(map[string]any))
		}
	}
	checked := 0
	for _, ex := range examples {
		if ex.fragment {
			continue
		}
		checked++
		t.Run(fmt.Sprintf("%s:%d", ex.file, ex.line), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "example.jsonc")
			if err := os.WriteFile(path, []byte(ex.text), 0o644); err != nil {
				t.Fatal(err)
			}
			doc, err := source.Parse(path, []byte(ex.text))
			if err != nil {
				t.Fatalf("does not parse (mark an excerpt with <!-- fragment -->): %v", err)
			}
			kind, err := schemas.DetectKind(doc)
			if err != nil {
				t.Fatalf("kind: %v", err)
			}
			if err := schemas.Validate(kind, doc); err != nil {
				t.Fatalf("invalid %s config: %v", kind, err)
			}
			if kind == schemas.Environment && pageTunables[ex.file] != nil {
				data, err := json.Marshal(pageTunables[ex.file])
				if err != nil {
					t.Fatal(err)
				}
				for _, inc := range stringsAt(doc.Root.Value(), "include_tunables") {
					if filepath.IsLocal(inc) {
						p := filepath.Join(dir, inc)
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, data, 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			err = loadExample(t, dir, path, kind, doc)
			if err != nil && incomplete.MatchString(err.Error()) {
				// It includes files or tunable groups the docs do not
				// show with it: a part of a larger setup.
				t.Logf("not a complete config (checked against the schema only): %v", err)
				return
			}
			if err != nil {
				t.Fatalf("%s config does not load: %v", kind, err)
			}
		})
	}
	t.Logf("%d examples, %d checked, %d fragments", len(examples), checked, len(examples)-checked)
}

func loadExample(t *testing.T, dir, path string, kind schemas.Kind, doc *source.Doc) error {
	ctx := context.Background()
	t.Chdir(dir)
	// docs/cloud.md names an AWS shared-config profile "bench".
	awsConfig := filepath.Join(dir, "aws-config")
	if err := os.WriteFile(awsConfig, []byte("[profile bench]\nregion = us-east-1\n"), 0o600); err != nil {
		return err
	}
	awsCreds := filepath.Join(dir, "aws-credentials")
	if err := os.WriteFile(awsCreds, []byte("[bench]\naws_access_key_id = docs\naws_secret_access_key = docs\n"), 0o600); err != nil {
		return err
	}
	t.Setenv("AWS_CONFIG_FILE", awsConfig)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", awsCreds)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	loader, err := configs.NewLoader(func(k configs.Kind, d *source.Doc) error { return schemas.Validate(schemas.Kind(k), d) }, dir)
	if err != nil {
		return err
	}
	globals := maps.Clone(docGlobals)
	// Required parameters come from globals files in the docs.
	for _, name := range stringsAt(doc.Root.Value(), "config", "required_args") {
		if _, ok := globals[name]; !ok {
			globals[name] = "x"
		}
	}
	switch kind {
	case schemas.TunableParams:
		_, err := tunables.ParseParams(doc.At())
		return err
	case schemas.TunableValues:
		_, err := tunables.ParseValues(doc.At())
		return err
	case schemas.Globals:
		_, err := configs.Prepare(&configs.Args{Globals: []string{path}}, validate)
		return err
	case schemas.CLI:
		_, err := configs.Prepare(&configs.Args{Config: path}, validate)
		return err
	case schemas.Storage:
		_, err := launcher.StorageConfig(loader, path, globals)
		return err
	case schemas.Scheduler:
		m, _ := doc.Root.Value().(map[string]any)
		cfg, _ := m["config"].(map[string]any)
		class, _ := m["class"].(string)
		_, err := schedulers.DecodeConfig(class, cfg, globals, doc.At(), "DOCS", true)
		return err
	case schemas.Optimizer:
		m, _ := doc.Root.Value().(map[string]any)
		cfg, _ := m["config"].(map[string]any)
		if cfg == nil {
			cfg = map[string]any{}
		}
		class, _ := m["class"].(string)
		tun, err := tunables.ParseParams(mustParse(t, `{"g": {"cost": 1, "params": {
			"x": {"type": "int", "range": [0, 10], "default": 5},
			"c": {"type": "categorical", "values": ["a", "b"], "default": "a"}}}}`).At())
		if err != nil {
			return err
		}
		_, err = optimizers.New(optimizers.Spec{Class: class, Config: cfg, Ref: doc.At(), Tunables: tun, Globals: globals})
		return err
	case schemas.Service, schemas.Environment:
		b := environments.NewBuilder(loader)
		defer b.Close()
		local, err := services.New(ctx, services.Spec{Class: "mlos_bench.services.local.local_exec.LocalExecService", Config: map[string]any{}, Globals: globals, SearchPath: loader.Paths()})
		if err != nil {
			return err
		}
		base := services.NewStack(local)
		defer base.Close()
		if kind == schemas.Service {
			_, err := b.LoadServices(ctx, []string{path}, globals, base)
			return err
		}
		env, err := b.LoadEnvironment(ctx, path, nil, globals, nil, base, nil)
		if err != nil {
			return err
		}
		return env.Close()
	}
	t.Logf("no loader for kind %s: checked against the schema only", kind)
	return nil
}

func mustParse(t *testing.T, text string) *source.Doc {
	t.Helper()
	d, err := source.Parse("inline.jsonc", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func stringsAt(v any, path ...string) []string {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
