package azure

import (
	"path/filepath"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/services"
)

// TestSchemaExamplesConstruct builds every AzureFileShareService config
// that the schema's test data calls good, so that the schema and the
// implementation accept the same keys.
func TestSchemaExamplesConstruct(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "schemas", "testdata", "good", "service", "azure-fileshare-*.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no AzureFileShareService examples in schemas/testdata/good/service yet")
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
			cfg, _ := m["config"].(map[string]any)
			svc, err := services.New(t.Context(), services.Spec{Class: class, Config: cfg, Ref: doc.At()})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := svc.(*FileShareService); !ok {
				t.Fatalf("built %T", svc)
			}
		})
	}
}
