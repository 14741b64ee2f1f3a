//go:build race

package ci

// raceEnabled: the statistical measurements (many thousands of
// resamples and permutations) are skipped under the race detector, which
// makes them minutes long; they run in the plain test run.
const raceEnabled = true
