package main

import (
	"strconv"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// anyFidelity reports whether some trial ran under a multi-fidelity
// scheduler: bench results then has a "fidelity" column ("15 of 60"), so
// that lower-fidelity trials are told from the answers.
func anyFidelity(trials []storage.Trial) bool {
	for _, t := range trials {
		if _, _, ok := trial.FidelityOf(t.Metadata); ok {
			return true
		}
	}
	return false
}

// fidelityCell is a trial's fidelity column: "15 of 60" ("" for none).
func fidelityCell(t storage.Trial) string {
	v, full, ok := trial.FidelityOf(t.Metadata)
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64) + " of " + strconv.FormatFloat(full, 'g', -1, 64)
}
