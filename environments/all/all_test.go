package all_test

import (
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	_ "github.com/benchtune/bench/environments/all"
	"github.com/benchtune/bench/schemas"
)

// TestEveryClassOfTheSchemasIsRegistered reads the class enums of the
// environment schemas and checks that each name builds an environment.
func TestEveryClassOfTheSchemasIsRegistered(t *testing.T) {
	registered := map[string]bool{}
	for _, c := range environments.Classes() {
		registered[c] = true
	}
	var seen int
	files, err := schemas.ClassNames("environments")
	if err != nil {
		t.Fatal(err)
	}
	for p, classes := range files {
		for _, c := range classes {
			seen++
			if !registered[c] {
				t.Errorf("%s: class %q is not registered", p, c)
			}
		}
	}
	if seen < 30 {
		t.Errorf("found only %d class names in the schemas", seen)
	}
	// Every mlos_bench spelling and the bench alias of each class.
	for _, short := range []string{"CompositeEnv", "LocalEnv", "LocalFileShareEnv", "MockEnv", "RemoteEnv",
		"HostEnv", "VMEnv", "OSEnv", "NetworkEnv", "SaaSEnv"} {
		if !registered["bench.environments."+short] {
			t.Errorf("bench.environments.%s is not registered", short)
		}
		n := 0
		for c := range registered {
			if strings.HasPrefix(c, "mlos_bench.") && strings.HasSuffix(c, "."+short) {
				n++
			}
		}
		if n < 2 {
			t.Errorf("%s has %d mlos_bench spellings registered", short, n)
		}
	}
}
