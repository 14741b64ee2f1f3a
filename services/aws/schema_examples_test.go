package aws

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
)

// TestSchemaExamplesConstruct builds every AWS service config that the
// schema's test data calls good, so that the schemas and the
// implementations accept the same keys.
func TestSchemaExamplesConstruct(t *testing.T) {
	// The examples name a profile "bench": give them one, in a throwaway
	// config file (never ~/.aws).
	dir := t.TempDir()
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(conf, []byte("[profile bench]\nregion = eu-west-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", conf)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	var files []string
	for _, pat := range []string{"s3-*.jsonc", "aws-*.jsonc"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "schemas", "testdata", "good", "service", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 2 {
		t.Fatalf("found %d AWS examples in the schema test data, want at least the S3 ones", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			doc, err := source.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, ok := doc.Root.Value().(map[string]any)
			if !ok {
				t.Fatalf("%s is not an object", f)
			}
			class, _ := m["class"].(string)
			if !strings.HasPrefix(class, "bench.services.") {
				t.Fatalf("class %q", class)
			}
			cfg, _ := m["config"].(map[string]any)
			svc, err := services.New(t.Context(), services.Spec{Class: class, Config: cfg, Ref: doc.At()})
			if err != nil {
				t.Fatal(err)
			}
			if svc == nil {
				t.Fatal("no service")
			}
		})
	}
}
