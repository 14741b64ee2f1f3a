package sql

import (
	"context"
	"fmt"
	"slices"

	"github.com/benchtune/bench/storage"
)

var _ storage.NoteAdder = (*experiment)(nil)

// AddNotes records notes with the experiment (those it lacks, appended).
// A note already recorded is moved to the end, so that the last end
// reason of a resumed experiment is the last note.
func (e *experiment) AddNotes(ctx context.Context, notes ...string) error {
	return e.s.write(ctx, func(r runner) error {
		info, err := e.s.loadInfo(ctx, r, e.info.ID)
		if err != nil {
			return err
		}
		stored := slices.DeleteFunc(slices.Clone(info.Notes), func(n string) bool { return slices.Contains(notes, n) })
		merged := mergeNotes(stored, notes)
		if slices.Equal(merged, info.Notes) {
			return nil
		}
		if _, err := r.exec(ctx, `UPDATE experiment SET notes = ? WHERE exp_id = ?`, encodeNotes(merged), e.info.ID); err != nil {
			return fmt.Errorf("storage: record notes of experiment %q: %w", e.info.ID, err)
		}
		e.info.Notes = merged
		return nil
	})
}
