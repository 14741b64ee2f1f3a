package trial

import (
	"sort"
	"time"
)

// Telemetry returns p as telemetry rows with its step, one per value,
// sorted by metric name; a zero Ts becomes now.
func (p Progress) Telemetry(now time.Time) []Telemetry {
	ts := p.Ts
	if ts.IsZero() {
		ts = now
	}
	names := make([]string, 0, len(p.Values))
	for k := range p.Values {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]Telemetry, 0, len(names))
	for _, k := range names {
		step := p.Step
		out = append(out, Telemetry{Ts: ts, Metric: k, Value: p.Values[k], Step: &step})
	}
	return out
}
