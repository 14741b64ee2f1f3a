//go:build !race

package ci

const raceEnabled = false
