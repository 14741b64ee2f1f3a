package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/configs/source"
)

// problems validates doc and returns its problems as "line:col: at path: msg"
// (the file name stripped), or nil when it is valid.
func problems(t *testing.T, kind Kind, doc *source.Doc) []string {
	t.Helper()
	err := Validate(kind, doc)
	if err == nil {
		return nil
	}
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Validate(%s) returned %T (%v), want *ValidationError", kind, err, err)
	}
	out := make([]string, len(verr.Problems))
	for i, p := range verr.Problems {
		out[i] = strings.TrimPrefix(p.Error(), doc.File+":")
	}
	return out
}

func parse(t *testing.T, file, text string) *source.Doc {
	t.Helper()
	doc, err := source.Parse(file, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

var expectLine = regexp.MustCompile(`(?m)^// expect: (.*)$`)

// TestExtensionCases checks bench's own good and bad configs under
// testdata/{good,bad}/<kind>/. A bad file lists every problem it must
// produce, in order, as "// expect: line:col: at path: message" lines.
func TestExtensionCases(t *testing.T) {
	for _, verdict := range []string{"good", "bad"} {
		files, err := filepath.Glob(filepath.Join("testdata", verdict, "*", "*.jsonc"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) < 5 {
			t.Fatalf("only %d %s test files", len(files), verdict)
		}
		for _, file := range files {
			kind := Kind(filepath.Base(filepath.Dir(file)))
			if kind.SchemaPath() == "" {
				t.Fatalf("%s: folder does not name a kind", file)
			}
			t.Run(verdict+"/"+string(kind)+"/"+filepath.Base(file), func(t *testing.T) {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				doc := parse(t, file, string(data))
				got := problems(t, kind, doc)
				unified := problems(t, Unified, doc)
				if verdict == "good" {
					if got != nil || unified != nil {
						t.Errorf("good config rejected:\n%s\nunified:\n%s", strings.Join(got, "\n"), strings.Join(unified, "\n"))
					}
					return
				}
				var want []string
				for _, m := range expectLine.FindAllStringSubmatch(string(data), -1) {
					want = append(want, m[1])
				}
				if len(want) == 0 {
					t.Fatal("bad test file without expect lines")
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s problems (-want +got):\n%s", kind, diff)
				}
				if diff := cmp.Diff(want, unified); diff != "" {
					t.Errorf("unified problems (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestMessages(t *testing.T) {
	tests := []struct {
		name string
		kind Kind
		file string
		text string
		want []string
	}{
		{
			name: "unknown property points at the key",
			kind: Environment,
			text: "{\n  name: 'x',\n  class: 'mlos_bench.environments.LocalEnv',\n  config: {run: ['true'], extra: 1},\n  typo: true,\n}",
			want: []string{
				`4:27: at /config/extra: unknown property "extra"`,
				`5:3: at /typo: unknown property "typo"`,
			},
		},
		{
			name: "missing required property points at the object",
			kind: Environment,
			text: `{"class": "mlos_bench.environments.MockEnv"}`,
			want: []string{`1:1: missing required property "name"`},
		},
		{
			name: "missing class",
			kind: Optimizer,
			text: `{"config": {"seed": 1}}`,
			want: []string{`1:1: missing required property "class"`},
		},
		{
			name: "missing class in the unified schema",
			kind: Unified,
			text: `{"config": {"seed": 1}}`,
			want: []string{`1:1: missing required property "class"`},
		},
		{
			name: "wrong type",
			kind: CLI,
			text: `{"trial_config_repeat_count": "3", "teardown": 1}`,
			want: []string{
				`1:31: at /trial_config_repeat_count: expected integer, got string`,
				`1:48: at /teardown: expected boolean, got number`,
			},
		},
		{
			name: "non-integral number for an integer",
			kind: Scheduler,
			text: `{"class": "mlos_bench.schedulers.SyncScheduler", "config": {"max_trials": 1.5}}`,
			want: []string{`1:75: at /config/max_trials: expected integer, got number`},
		},
		{
			name: "enum",
			kind: CLI,
			text: `{"log_level": "LOUD"}`,
			want: []string{`1:15: at /log_level: must be one of: "CRITICAL", "FATAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG"`},
		},
		{
			name: "minimum",
			kind: CLI,
			text: `{"num_trial_runners": 0}`,
			want: []string{`1:23: at /num_trial_runners: must be >= 1`},
		},
		{
			name: "path or list of paths",
			kind: CLI,
			text: `{"globals": 3, "tunable_values": ["a.jsonc", "b.txt"]}`,
			want: []string{
				`1:13: at /globals: expected string or array, got number`,
				`1:46: at /tunable_values/1: must be the path of a .json or .jsonc file`,
			},
		},
		{
			name: "unknown class lists the known ones of the same kind",
			kind: Unified,
			text: `{"class": "mlos_bench.schedulers.FooScheduler"}`,
			want: []string{`1:11: at /class: unknown class "mlos_bench.schedulers.FooScheduler"; known classes: mlos_bench.schedulers.SyncScheduler, bench.schedulers.ParallelScheduler (other spellings, such as the full module path, work too)`},
		},
		{
			name: "class of no known kind",
			kind: Unified,
			text: `{"class": "foo.Bar"}`,
			want: []string{`1:11: at /class: unknown class "foo.Bar"; known classes: mlos_bench.environments.CompositeEnv, mlos_bench.environments.MockEnv, mlos_bench.environments.LocalEnv, mlos_bench.environments.LocalFileShareEnv, mlos_bench.environments.RemoteEnv, mlos_bench.environments.remote.HostEnv, mlos_bench.environments.remote.VMEnv, mlos_bench.environments.remote.OSEnv, mlos_bench.environments.remote.NetworkEnv, mlos_bench.environments.remote.SaaSEnv, mlos_bench.optimizers.OneShotOptimizer, mlos_bench.optimizers.ManualOptimizer, mlos_bench.optimizers.MockOptimizer, mlos_bench.optimizers.GridSearchOptimizer, mlos_bench.optimizers.MlosCoreOptimizer, mlos_bench.schedulers.SyncScheduler, bench.schedulers.ParallelScheduler, mlos_bench.services.ConfigPersistenceService, mlos_bench.services.LocalExecService, mlos_bench.services.local.temp_dir_context.TempDirContextService, bench.services.LocalDirFileShareService, mlos_bench.services.remote.ssh.SshHostService, mlos_bench.services.remote.ssh.SshFileShareService, mlos_bench.services.remote.azure.AzureAuthService, mlos_bench.services.remote.azure.AzureFileShareService, mlos_bench.services.remote.azure.AzureNetworkService, mlos_bench.services.remote.azure.AzureVMService, mlos_bench.services.remote.azure.AzureSaaSConfigService, bench.services.S3FileShareService, bench.services.AwsEc2Service, bench.services.AwsSsmService, mlos_bench.storage.sql.storage.SqlStorage (other spellings, such as the full module path, work too)`},
		},
		{
			name: "class of the wrong type",
			kind: Environment,
			text: `{"name": "x", "class": 42}`,
			want: []string{`1:24: at /class: expected string, got number`},
		},
		{
			name: "matched class branch only",
			kind: Unified,
			text: `{"class": "mlos_bench.optimizers.MlosCoreOptimizer", "config": {"optimizer_type": "TPE", "seed": "x"}}`,
			want: []string{
				`1:83: at /config/optimizer_type: must be one of: null, "FLAML", "RANDOM", "SMAC"`,
				`1:98: at /config/seed: expected integer, got string`,
			},
		},
		{
			name: "tunable type",
			kind: TunableParams,
			text: `{"g": {"cost": 1, "params": {"p": {"type": "bool", "default": true}}}}`,
			want: []string{`1:44: at /g/params/p/type: must be one of: "categorical", "int", "float"`},
		},
		{
			name: "tunable without type",
			kind: TunableParams,
			text: `{"g": {"cost": 1, "params": {"p": {"default": 1, "range": [0, 2]}}}}`,
			want: []string{`1:35: at /g/params/p: missing required property "type"`},
		},
		{
			name: "tunable of a known type reports only that type's problems",
			kind: TunableParams,
			text: `{"g": {"cost": 1, "params": {"p": {"type": "int", "default": 1, "range": [0, 2], "values": [1]}}}}`,
			want: []string{`1:82: at /g/params/p/values: unknown property "values"`},
		},
		{
			name: "distribution",
			kind: TunableParams,
			text: `{"g": {"cost": 1, "params": {"p": {"type": "float", "default": 1, "range": [0, 2], "distribution": {"type": "beta", "params": {"alpha": 0}}}}}}`,
			want: []string{
				`1:127: at /g/params/p/distribution/params: missing required property "beta"`,
				`1:137: at /g/params/p/distribution/params/alpha: must be > 0`,
			},
		},
		{
			name: "unified picks the kind from the structure",
			kind: Unified,
			text: `{"g": {"cost": 1, "params": {"p": {"type": "int", "default": 1.5, "range": [0, 2]}}}}`,
			want: []string{`1:62: at /g/params/p/default: expected integer, got number`},
		},
		{
			name: "globals",
			kind: Globals,
			text: `{"a": {"b": 1}, "trial_id": -1, "tunable_values": "x.jsonc", "optimization_targets": {"score": "best"}}`,
			want: []string{
				`1:7: at /a: expected null, boolean, number, string or array, got object`,
				`1:29: at /trial_id: must be >= 0`,
				`1:33: at /tunable_values: "tunable_values" is not allowed in a globals file; put tunable values in a tunable-values file`,
				`1:96: at /optimization_targets/score: must be one of: "min", "max"`,
			},
		},
		{
			name: "tunable values",
			kind: TunableValues,
			text: `{"a": null, "$comment": "x"}`,
			want: []string{
				`1:7: at /a: expected boolean, number or string, got null`,
				`1:13: at /$comment: unknown property "$comment"`,
			},
		},
		{
			name: "duplicate items",
			kind: Environment,
			text: `{"name": "x", "class": "bench.environments.MockEnv", "config": {"tunable_params": ["a", "b", "a"]}}`,
			want: []string{`1:94: at /config/tunable_params/2: duplicate of item 0: items must be unique`},
		},
		{
			name: "services list and single service are exclusive",
			kind: Service,
			text: `{"class": "mlos_bench.services.LocalExecService", "services": [{"class": "mlos_bench.services.LocalExecService"}]}`,
			want: []string{`1:2: at /class: unknown property "class"`},
		},
		{
			name: "root is not an object",
			kind: Storage,
			text: `["x"]`,
			want: []string{`1:1: expected object, got array`},
		},
		{
			name: "unknown $schema",
			kind: Optimizer,
			text: `{"$schema": "https://example.com/optimizer.json", "class": "bench.optimizers.MockOptimizer"}`,
			want: []string{`1:13: at /$schema: must be a URL or path ending in /schemas/optimizers/optimizer-schema.json`},
		},
		{
			name: "secrets are not echoed",
			kind: Storage,
			text: `{"class": "bench.storage.SqlStorage", "config": {"drivername": "postgresql", "database": "d", "host": "h", "username": "u", "password": 123456789}}`,
			want: []string{`1:137: at /config/password: expected string, got number`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file
			if file == "" {
				file = "test.jsonc"
			}
			got := problems(t, tt.kind, parse(t, file, tt.text))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidationErrorFormat(t *testing.T) {
	doc := parse(t, "dir/env.jsonc", "{\n  \"name\": 1,\n  \"class\": \"bench.environments.MockEnv\",\n  \"x\": 2\n}")
	err := Validate(Environment, doc)
	want := "dir/env.jsonc:2:11: at /name: expected string, got number\n" +
		"dir/env.jsonc:4:3: at /x: unknown property \"x\""
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want:\n%s", err, want)
	}
	var se *source.Error
	if !errors.As(err, &se) || se.Path != "/name" || se.Pos.Line != 2 {
		t.Errorf("errors.As(*source.Error) = %+v", se)
	}
}

func TestValidateBadInput(t *testing.T) {
	doc := parse(t, "x.json", `{}`)
	var verr *ValidationError
	if err := Validate("nonsense", doc); err == nil || errors.As(err, &verr) {
		t.Errorf("unknown kind: got %v, want a plain error", err)
	}
	if err := Validate(Globals, nil); !errors.As(err, &verr) || len(verr.Problems) != 1 {
		t.Errorf("nil doc: got %v", err)
	}
	if err := Validate(Globals, doc); err != nil {
		t.Errorf("empty globals: %v", err)
	}
	if err := Validate(Unified, parse(t, "x.json", `-Infinity`)); err == nil || !strings.Contains(err.Error(), "-Infinity is not allowed") {
		t.Errorf("-Infinity root: got %v", err)
	}
}

func TestKinds(t *testing.T) {
	kinds := Kinds()
	if len(kinds) != len(rootFiles) || kinds[len(kinds)-1] != Unified {
		t.Fatalf("Kinds() = %v", kinds)
	}
	for _, k := range kinds {
		if _, err := fs.Stat(FS(), k.SchemaPath()); err != nil {
			t.Errorf("%s: %v", k, err)
		}
		if k.SchemaURL() != CanonicalPrefix+k.SchemaPath() {
			t.Errorf("%s: SchemaURL %q", k, k.SchemaURL())
		}
	}
	kinds[0] = "changed"
	if Kinds()[0] != CLI {
		t.Error("Kinds() shares its slice")
	}
}

func TestDetectKind(t *testing.T) {
	const env = `{"name": "x", "class": "mlos_bench.environments.LocalEnv"}`
	tests := []struct {
		file, text string
		want       Kind
		err        string
	}{
		{"a.jsonc", `{"$schema": "https://raw.githubusercontent.com/microsoft/MLOS/main/mlos_bench/mlos_bench/config/schemas/environments/environment-schema.json"}`, Environment, ""},
		{"a.jsonc", `{"$schema": "../../.vscode/schemas/cli/globals-schema.json#x"}`, Globals, ""},
		{"cli/a.jsonc", `{"$schema": "./schemas/tunables/tunable-values-schema.json"}`, TunableValues, ""},
		{"a.jsonc", `{"$schema": "https://x/schemas/mlos-bench-config-schema.json", "class": "bench.storage.SqlStorage"}`, Unified, ""},
		{"a.jsonc", `{"$schema": "https://x/other.json"}`, "", `unknown "$schema"`},
		{"a.jsonc", `{"$schema": 1}`, "", `"$schema" must be a string`},
		{"a.jsonc", `[1]`, "", "must be a JSON object, not an array"},
		{"a.jsonc", `"x"`, "", "must be a JSON object, not a string"},
		{"x/my-tunables.jsonc", env, Environment, ""},
		{"a.jsonc", `{"class": "bench.optimizers.MockOptimizer"}`, Optimizer, ""},
		{"a.jsonc", `{"class": "mlos_bench.schedulers.SyncScheduler"}`, Scheduler, ""},
		{"a.jsonc", `{"class": "mlos_bench.tests.services.mock_service.MockServiceBase"}`, Service, ""},
		{"a.jsonc", `{"class": "mlos_bench.storage.sql.storage.SqlStorage"}`, Storage, ""},
		{"a.jsonc", `{"class": "foo.Bar"}`, Unified, ""},
		{"a.jsonc", `{"services": [{"class": "x"}]}`, Service, ""},
		{"a.jsonc", `{"services": ["services/x.jsonc"]}`, CLI, ""},
		{"experiment_x.jsonc", `{"environment": "env.jsonc"}`, CLI, ""},
		// Keys only a CLI config has make it one, even without "$schema"
		// and with a flat body that would pass for globals.
		{"run.jsonc", `{"experiment_id": "e", "teardown": false}`, CLI, ""},
		{"experiments/run.jsonc", `{"random_init": true, "trial_config_repeat_count": 3}`, CLI, ""},
		{"run.jsonc", `{"experiment_id": "e", "trial_config_repeat_count": 3}`, Globals, ""},
		{"globals.jsonc", `{"g": {"cost": 1, "params": {}}}`, TunableParams, ""},
		{"env/redis-tunables.jsonc", `{}`, TunableParams, ""},
		{"tunables/x.json", `{}`, TunableParams, ""},
		{"conf/tunable-values-example.jsonc", `{"a": 1}`, TunableValues, ""},
		{"tunable-values/x.jsonc", `{"a": 1}`, TunableValues, ""},
		{"cli/bench.jsonc", `{}`, CLI, ""},
		{"my-cli-config.jsonc", `{}`, CLI, ""},
		{"experiments/redis.jsonc", `{"a": 1}`, Globals, ""},
		{"experiment_RedisBench.jsonc", `{"a": 1}`, Globals, ""},
		{"global_config_azure.jsonc", `{"a": 1}`, Globals, ""},
		{"anything.mlos.jsonc", `{"a": 1}`, Unified, ""},
		{"anything.jsonc", `{"a": 1, "b": [1, "x"], "optimization_targets": {"score": "min"}}`, Globals, ""},
		{"anything.jsonc", `{"a": {"b": 1}}`, Unified, ""},
		{"<command line>", `{"a": 1}`, Globals, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.text, func(t *testing.T) {
			got, err := DetectKind(parse(t, tt.file, tt.text))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %q, %v; want error containing %q", got, err, tt.err)
				}
				var se *source.Error
				if !errors.As(err, &se) || se.Pos.Line == 0 {
					t.Errorf("error is not located: %#v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "schemas")
	if err := Export(dir); err != nil {
		t.Fatal(err)
	}
	// Exporting again overwrites.
	if err := Export(dir); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		orig, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		out, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		var a, b map[string]any
		if err := json.Unmarshal(orig, &a); err != nil {
			return err
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Errorf("%s: exported file is not JSON: %v", p, err)
			return nil
		}
		if _, ok := b["$id"]; ok {
			t.Errorf("%s: exported file keeps its $id", p)
		}
		delete(a, "$id")
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("%s: exported content differs (-embedded +exported):\n%s", p, diff)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			written++
		}
		return err
	})
	if err != nil || n < len(rootFiles) || written != n {
		t.Errorf("exported %d files of %d (%v)", written, n, err)
	}
	// A path that cannot be a directory fails with an error.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Export(file); err == nil {
		t.Error("Export into a file succeeded")
	}
}

// TestSchemaFiles checks the rules the embedded files follow (see README.md).
func TestSchemaFiles(t *testing.T) {
	classEnum := regexp.MustCompile(`^(mlos_bench|bench)\.(environments|optimizers|schedulers|storage)\.`)
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Errorf("%s: not strict JSON: %v", p, err)
			return nil
		}
		if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema is %v", p, doc["$schema"])
		}
		if doc["$id"] != CanonicalPrefix+p {
			t.Errorf("%s: $id is %v", p, doc["$id"])
		}
		if got := len(idLine.FindAll(data, -1)); got != 1 {
			t.Errorf("%s: %d \"$id\" lines, want exactly 1", p, got)
		}
		if bytes.Contains(data, []byte(`"propertyNames"`)) {
			t.Errorf("%s: uses propertyNames (its errors carry a wrong location in jsonschema v6)", p)
		}
		// Class enums of environments, optimizers, schedulers and storage
		// accept the bench.<kind>.<Class> alias for every class.
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				if props, ok := x["properties"].(map[string]any); ok {
					if cls, ok := props["class"].(map[string]any); ok {
						if enum, ok := cls["enum"].([]any); ok {
							checkAliases(t, p, enum, classEnum)
						}
					}
				}
				for _, e := range x {
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(doc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkAliases(t *testing.T, file string, enum []any, classEnum *regexp.Regexp) {
	var names []string
	for _, e := range enum {
		if s, ok := e.(string); ok {
			names = append(names, s)
		}
	}
	for _, n := range names {
		m := classEnum.FindStringSubmatch(n)
		if m == nil || m[1] != "mlos_bench" {
			continue
		}
		alias := "bench." + m[2] + "." + n[strings.LastIndex(n, ".")+1:]
		if !slices.Contains(names, alias) {
			t.Errorf("%s: class enum has %s but not %s", file, n, alias)
		}
	}
}

// TestConcurrentValidate validates several kinds at once from many
// goroutines on a fresh schema set, so that kinds compile lazily while
// others are in use (run it with -race).
func TestConcurrentValidate(t *testing.T) {
	c, err := newCompiled()
	if err != nil {
		t.Fatal(err)
	}
	docs := []struct {
		kind Kind
		doc  *source.Doc
		ok   bool
	}{
		{Environment, parse(t, "a.jsonc", `{"name": "x", "class": "bench.environments.LocalEnv", "config": {"run": ["true"]}}`), true},
		{Environment, parse(t, "b.jsonc", `{"name": "x", "class": "bench.environments.LocalEnv", "config": {"run": "true"}}`), false},
		{Unified, parse(t, "c.jsonc", `{"class": "bench.services.S3FileShareService", "config": {"bucket": "b"}}`), true},
		{Unified, parse(t, "d.jsonc", `{"class": "bench.services.S3FileShareService", "config": {}}`), false},
		{Optimizer, parse(t, "e.jsonc", `{"class": "mlos_bench.optimizers.MockOptimizer", "config": {"seed": 1}}`), true},
		{Storage, parse(t, "f.jsonc", `{"class": "mlos_bench.storage.sql.storage.SqlStorage", "config": {"drivername": "sqlite", "database": "x.db"}}`), true},
		{TunableParams, parse(t, "g.jsonc", `{"g": {"cost": 1, "params": {"x": {"type": "int", "range": [0, 9], "default": 1}}}}`), true},
		{TunableParams, parse(t, "h.jsonc", `{"g": {"cost": 1, "params": {"x": {"type": "int", "default": 1}}}}`), false},
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				for j := range docs {
					d := docs[(j+g)%len(docs)] // each goroutine starts with another kind
					if err := c.check(d.kind, d.doc); (err == nil) != d.ok {
						t.Errorf("%s: got %v", d.doc.File, err)
					}
				}
			}
		}()
	}
	wg.Wait()
}
