package azure

import (
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
	files, err := schemas.ClassNames("services/remote/azure")
	if err != nil {
		t.Fatal(err)
	}
	for p, classes := range files {
		for _, c := range classes {
			seen++
			if !slices.Contains(known, c) {
				t.Errorf("%s: class %q is not registered", p, c)
			}
		}
	}
	if seen < 10 {
		t.Errorf("only %d class names found", seen)
	}
}
