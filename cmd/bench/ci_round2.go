package main

// ciRound2 holds bench ci's options of round two (docs/ci.md): results
// read from files, A/B in one job, sequential repeats, history and CI
// integrations.
type ciRound2 struct {
}

// parse takes one of the round-two options (key without "--"); handled
// is false for any other.
func (r *ciRound2) parse(key string, next func() (string, error)) (handled bool, err error) {
	switch key {
	}
	return false, nil
}
