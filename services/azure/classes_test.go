package azure

import (
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"testing"

	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/services"
)

// TestEverySchemaClassIsRegistered reads the class enums of the Azure
// service schemas and checks that bench builds each of them, so that no
// config the schemas accept is refused with "unknown service class".
func TestEverySchemaClassIsRegistered(t *testing.T) {
	known := services.Classes()
	var seen int
	err := fs.WalkDir(schemas.FS(), "services/remote/azure", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		data, err := fs.ReadFile(schemas.FS(), p)
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
			return err
		}
		for _, c := range doc.Properties.Class.Enum {
			seen++
			if !slices.Contains(known, c) {
				t.Errorf("%s: class %q is not registered", p, c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 10 {
		t.Errorf("only %d class names found", seen)
	}
}
