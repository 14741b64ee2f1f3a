package schedulers

import (
	"maps"
	"slices"
)

// ConfigKeys are the scheduler config keys, mlos_bench's and bench's:
// the globals a scheduler reads.
func ConfigKeys() []string {
	return slices.Sorted(maps.Keys(withFidelityDefaults(withPruneDefaults(withNoiseDefaults(defaults("", false))))))
}
