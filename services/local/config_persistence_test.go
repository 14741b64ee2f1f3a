package local

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/services"
	"github.com/google/go-cmp/cmp"
)

func TestConfigPersistenceService(t *testing.T) {
	cwd := t.TempDir()
	t.Chdir(cwd)
	other := t.TempDir()
	for _, class := range ConfigPersistenceClasses {
		spec := specFrom(t, `{"class": "`+class+`", "config": {"config_path": ["cfg", "`+other+`", "cfg", "."]}}`, nil)
		svc, err := services.New(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		sp, ok := svc.(services.ConfigSearchPath)
		if !ok {
			t.Fatalf("%s is not a ConfigSearchPath", class)
		}
		// The working folder first, then config_path made absolute against
		// it, each once (mlos_bench's ConfigPersistenceService).
		want := []string{cwd, filepath.Join(cwd, "cfg"), other}
		if diff := cmp.Diff(want, sp.ConfigSearchPath()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", class, diff)
		}
	}
	// No config: only the working folder.
	svc, err := services.New(context.Background(), specFrom(t, `{"class": "mlos_bench.services.ConfigPersistenceService"}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{cwd}, svc.(services.ConfigSearchPath).ConfigSearchPath()); diff != "" {
		t.Error(diff)
	}
	// Bad configs name the key.
	for text, want := range map[string]string{
		`{"class": "mlos_bench.services.ConfigPersistenceService", "config": {"config_pth": []}}`:   `unknown config key "config_pth"`,
		`{"class": "mlos_bench.services.ConfigPersistenceService", "config": {"config_path": [1]}}`: "config_path",
	} {
		_, err := services.New(context.Background(), specFrom(t, text, nil))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "svc.jsonc:1:") {
			t.Errorf("%s: got %v, want %q", text, err, want)
		}
	}
}

// A line whose script is one of mlos_bench's built-in scripts that bench
// does not ship fails as the shell says, and its errors say why.
func TestUnshippedMlosScriptHint(t *testing.T) {
	svc, err := NewLocalExec(DefaultConfig(), Options{SearchPath: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	res, err := svc.LocalExec(context.Background(), services.ExecRequest{
		Lines: []string{"environments/apps/redis/scripts/local/generate_redis_config.py in.json out.conf"},
		Dir:   t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "environments/apps/redis/scripts/local/generate_redis_config.py: it is one of mlos_bench's built-in configs, which bench does not ship") {
		t.Errorf("exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	// Other missing commands get no such note.
	res, _ = svc.LocalExec(context.Background(), services.ExecRequest{Lines: []string{"scripts/mine.sh"}, Dir: t.TempDir()})
	if res.ExitCode == 0 || strings.Contains(res.Stderr, "mlos_bench") {
		t.Errorf("exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
}
