package local

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
)

// specFrom parses a service config document into a Spec.
func specFrom(t *testing.T, text string, globals services.Params) services.Spec {
	t.Helper()
	doc, err := source.Parse("svc.jsonc", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	m := doc.Root.Value().(map[string]any)
	cfg, _ := m["config"].(map[string]any)
	return services.Spec{Class: m["class"].(string), Config: cfg, Globals: globals, Ref: doc.At()}
}

func TestRegisteredClasses(t *testing.T) {
	known := services.Classes()
	for _, c := range slices.Concat(LocalExecClasses, TempDirContextClasses, LocalDirFileShareClasses) {
		if !slices.Contains(known, c) {
			t.Errorf("class %s is not registered", c)
		}
	}
	ctx := context.Background()
	for _, c := range LocalExecClasses {
		svc, err := services.New(ctx, services.Spec{Class: c})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if _, ok := svc.(services.LocalExec); !ok {
			t.Errorf("%s is not a LocalExec", c)
		}
		if _, ok := svc.(services.TempDirs); !ok {
			t.Errorf("%s is not a TempDirs", c)
		}
	}
	svc, err := services.New(ctx, services.Spec{Class: TempDirContextClasses[0], Config: map[string]any{"keep_temp_dir": false}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := svc.(services.TempDirs); !ok {
		t.Error("TempDirContextService is not a TempDirs")
	}
	root := t.TempDir()
	for _, c := range LocalDirFileShareClasses {
		svc, err := services.New(ctx, services.Spec{Class: c, Config: map[string]any{"root": root}})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if _, ok := svc.(services.FileShare); !ok {
			t.Errorf("%s is not a FileShare", c)
		}
	}
}

func TestSpecTemplatingAndSearchPath(t *testing.T) {
	ctx := context.Background()
	work := t.TempDir()
	cfgDir := t.TempDir()
	writeFile(t, filepath.Join(cfgDir, "hello.sh"), "#!/bin/sh\necho hello from config\n", 0o755)

	// temp_dir is templated with the globals (mlos_bench's
	// test_temp_dir_path_expansion); unknown names stay as they are.
	spec := specFrom(t, `{
		"class": "mlos_bench.services.local.local_exec.LocalExecService",
		"config": {"temp_dir": "$workdir/temp", "abort_on_error": false, "max_output_bytes": 4096},
	}`, services.Params{"workdir": work})
	spec.SearchPath = []string{cfgDir}
	svc, err := services.New(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	le := svc.(*LocalExecService)
	res, err := le.LocalExec(ctx, services.ExecRequest{Lines: []string{"false", "pwd", "hello.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(work, "temp") + "\nhello from config\n"; res.Stdout != want || res.ExitCode != 0 {
		t.Errorf("got %d %q, want %q", res.ExitCode, res.Stdout, want)
	}

	// The file share's root is templated too.
	spec = specFrom(t, `{"class": "bench.services.LocalDirFileShareService", "config": {"root": "${workdir}/share/$unknown", "create_root": true}}`,
		services.Params{"workdir": work})
	svc, err = services.New(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := svc.(*LocalDirFileShareService).Root(), filepath.Join(work, "share", "$unknown"); got != want {
		t.Errorf("root %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(work, "share", "$unknown")); err != nil {
		t.Error(err)
	}
}

func TestSpecErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, doc string
		globals   services.Params
		want      []string
	}{
		{"unknown key", `{"class": "mlos_bench.services.LocalExecService",
  "config": {"bogus": 1}}`, nil, []string{"svc.jsonc:2:", "/config/bogus", `unknown config key "bogus"`, "abort_on_error"}},
		{"wrong type", `{"class": "mlos_bench.services.LocalExecService",
  "config": {"abort_on_error": "maybe"}}`, nil, []string{"svc.jsonc:2:", "/config/abort_on_error", "bool"}},
		{"bad max_output_bytes", `{"class": "mlos_bench.services.LocalExecService",
  "config": {"max_output_bytes": 0}}`, nil, []string{"/config/max_output_bytes", "positive"}},
		{"temp dir context knows no abort_on_error", `{"class": "mlos_bench.services.local.temp_dir_context.TempDirContextService",
  "config": {"abort_on_error": true}}`, nil, []string{"/config/abort_on_error", "unknown config key"}},
		{"file share needs a root", `{"class": "bench.services.LocalDirFileShareService", "config": {"create_root": true}}`, nil,
			[]string{"/config", `"root"`, "required"}},
		{"file share root missing", `{"class": "bench.services.LocalDirFileShareService", "config": {"root": "/nonexistent/bench/share"}}`, nil,
			[]string{"/config/root", "does not exist", "create_root"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := services.New(ctx, specFrom(t, tc.doc, tc.globals))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			var se *source.Error
			if !errors.As(err, &se) {
				t.Errorf("error %v is not located", err)
			}
		})
	}
	// The underlying error stays wrapped.
	_, err := services.New(ctx, specFrom(t, `{"class": "bench.services.LocalDirFileShareService", "config": {"root": "/nonexistent/bench/share"}}`, nil))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want fs.ErrNotExist inside", err)
	}
}
