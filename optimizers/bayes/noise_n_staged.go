package bayes

// SetOutputWarping turns the power transform of the targets (Yeo-Johnson,
// on unless Options.NoOutputWarping) on or off from the next fit: the
// hyperparameters are refitted then, warm-started from the current ones.
// For the staged refinement's local surface (bench only, an optbench
// experiment: -staged-warp off).
func (o *Optimizer) SetOutputWarping(on bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.opts.NoOutputWarping == !on {
		return
	}
	o.opts.NoOutputWarping = !on
	o.fitN = 0
	o.baseN = -1
	o.g = nil
}
