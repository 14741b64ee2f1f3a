package optimizers

import (
	"fmt"

	"github.com/benchtune/bench/tunables"
)

// PendingRegisterer is implemented by optimizers that take in, on resume,
// the configurations that earlier runs of the experiment suggested but
// that have no result to observe: trials still queued, running or
// interrupted (a resume runs them), and cancelled ones. They count as
// pending suggestions, so that a restarted, re-seeded optimizer does not
// suggest them again; a later Observe of the same configuration (id 0)
// settles them. Without it a resumed experiment spends its budget on
// repeats (each re-suggested configuration becomes a trial that reuses
// the first one's result).
type PendingRegisterer interface {
	RegisterPending(values []map[string]any) error
}

// RegisterPending adds earlier runs' unobserved configurations to the
// pending ones (under ids below 0, which no suggestion uses).
func (m *MlosCore) RegisterPending(values []map[string]any) error {
	if m.pending == nil {
		m.pending = map[int]tunables.Point{}
	}
	for _, v := range values {
		tun := m.tunables.Copy()
		if err := tun.Assign(v); err != nil {
			return fmt.Errorf("earlier trial's configuration no longer fits the tunables (did the tunables change? use a new experiment id): %w", err)
		}
		p, err := m.space.Encode(tun.Values())
		if err != nil {
			return err
		}
		m.resumed--
		m.pending[m.resumed] = m.space.Snap(p)
	}
	return nil
}

var _ PendingRegisterer = (*MlosCore)(nil)
