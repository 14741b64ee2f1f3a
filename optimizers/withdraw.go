package optimizers

// Withdrawer is implemented by optimizers that keep their suggestions
// pending until observed and can drop one without an outcome. A
// multi-fidelity scheduler (schedulers/fidelity.go) withdraws the
// suggestion of a configuration that ran only below full fidelity when
// the optimizer is not FidelityAware: such an optimizer is given only
// full-fidelity outcomes, so without this the suggestion would stay
// pending for ever. A full-fidelity outcome of the configuration that
// comes later (a promotion) is observed with id 0.
type Withdrawer interface {
	// Withdraw drops pending suggestion id (no-op for an unknown id); the
	// configuration is not suggested again.
	Withdraw(id int)
}

// Withdraw implements Withdrawer.
func (m *MlosCore) Withdraw(id int) {
	p, ok := m.pending[id]
	if !ok {
		return
	}
	delete(m.pending, id)
	if m.seen == nil {
		m.seen = map[string]bool{}
	}
	m.seen[pointKey(p)] = true
}

var _ Withdrawer = (*MlosCore)(nil)
