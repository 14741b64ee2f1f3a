package schedulers

import (
	"encoding/json"
	"io/fs"
	"maps"
	"slices"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/schemas"
)

// notFileKeys are keys of the decoder's defaults that a scheduler config
// file does not take: num_trial_runners is a CLI config key and a global
// (as in mlos_bench), confirm_now is bench confirm's internal switch.
var notFileKeys = map[string]bool{"num_trial_runners": true, "confirm_now": true}

// parallelSchema reads the ParallelScheduler's config properties from the
// embedded schema: the top-level keys and those of the pruner and
// fidelity objects.
func parallelSchema(t *testing.T) (top, pruner, fidelity map[string]bool) {
	t.Helper()
	data, err := fs.ReadFile(schemas.FS(), "schedulers/parallel-scheduler-subschema.json")
	if err != nil {
		t.Fatal(err)
	}
	type obj struct {
		Properties map[string]json.RawMessage `json:"properties"`
		AnyOf      []obj                      `json:"anyOf"`
	}
	var doc struct {
		Properties struct {
			Config obj `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(o obj) map[string]bool {
		m := map[string]bool{}
		for k := range o.Properties {
			m[k] = true
		}
		return m
	}
	objectOf := func(name string) map[string]bool {
		var o obj
		if err := json.Unmarshal(doc.Properties.Config.Properties[name], &o); err != nil {
			t.Fatal(err)
		}
		for _, alt := range o.AnyOf {
			if len(alt.Properties) > 0 {
				return keys(alt)
			}
		}
		t.Fatalf("the schema's %s has no object form", name)
		return nil
	}
	return keys(doc.Properties.Config), objectOf("pruner"), objectOf("fidelity")
}

// TestSchemaMatchesDecoder: every key the scheduler's decoder reads from a
// ParallelScheduler config is in its schema, and every key of the schema is
// read, so that a key the docs name is neither refused by bench validate
// nor silently ignored (canary was read but refused by the schema).
func TestSchemaMatchesDecoder(t *testing.T) {
	top, pruner, fidelity := parallelSchema(t)
	decoded := map[string]bool{}
	for k := range withFidelityDefaults(withPruneDefaults(withNoiseDefaults(defaults("e", true)))) {
		if !notFileKeys[k] {
			decoded[k] = true
		}
	}
	compare := func(what string, schema, code map[string]bool) {
		t.Helper()
		for _, k := range slices.Sorted(maps.Keys(code)) {
			if !schema[k] {
				t.Errorf("%s: the decoder reads %q but the schema does not have it", what, k)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(schema)) {
			if !code[k] {
				t.Errorf("%s: the schema has %q but the decoder does not read it", what, k)
			}
		}
	}
	compare("scheduler config", top, decoded)
	compare("pruner", pruner, prunerKeys)
	compare("fidelity", fidelity, fidelityKeys)

	// The defaults themselves validate (a config that spells them out;
	// config_id's default -1 means "none", which mlos_bench's schema does
	// not let a file say).
	cfg := map[string]any{}
	for k, v := range withFidelityDefaults(withPruneDefaults(withNoiseDefaults(defaults("e", true)))) {
		if !notFileKeys[k] && k != "config_id" {
			cfg[k] = v
		}
	}
	text, err := json.Marshal(map[string]any{"class": DefaultClass, "config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := source.Parse("scheduler.jsonc", text)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.Scheduler, doc); err != nil {
		t.Errorf("a scheduler config with every default spelled out is refused by the schema: %v", err)
	}
}
