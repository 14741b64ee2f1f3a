package storage

import (
	"context"
	"strconv"
	"strings"
)

// NoteAdder is an Experiment that can record notes after it was opened
// (the SQL storage): the scheduler records why a run ended with it.
type NoteAdder interface {
	// AddNotes adds the notes the experiment does not have yet (each kept
	// once, in the order first recorded).
	AddNotes(ctx context.Context, notes ...string) error
}

// EndReasonPrefix starts the note that says why a run of the experiment
// ended (a stopping rule, the budget, bench stop, ...).
const EndReasonPrefix = "end reason: "

// PlannedPrefix starts the note that records a run's budget: how many
// trials the experiment plans in all ("planned: 60 trials"), so that a
// reader other than the running bench (bench ui) can show progress and an
// ETA. The last such note holds.
const PlannedPrefix = "planned: "

// Planned returns the trial budget of the last planned note (0: none).
func Planned(notes []string) int {
	for i := len(notes) - 1; i >= 0; i-- {
		if r, ok := strings.CutPrefix(notes[i], PlannedPrefix); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(r, " trials"))
			if err != nil || n < 0 {
				return 0
			}
			return n
		}
	}
	return 0
}

// EndReason returns the last recorded end reason among notes ("" when
// none).
func EndReason(notes []string) string {
	for i := len(notes) - 1; i >= 0; i-- {
		if r, ok := strings.CutPrefix(notes[i], EndReasonPrefix); ok {
			return r
		}
	}
	return ""
}

// AddNotes passes notes, secrets redacted, to an experiment that can
// record them (nothing otherwise).
func (e *redacting) AddNotes(ctx context.Context, notes ...string) error {
	na, ok := e.Experiment.(NoteAdder)
	if !ok {
		return nil
	}
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = e.r.Redact(n)
	}
	return na.AddNotes(ctx, out...)
}
