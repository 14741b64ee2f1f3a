package trial

import "github.com/benchtune/bench/internal/capture"

// MaxReasonBytes bounds a trial's failure reason: a longer one keeps its
// first and last bytes around a marker saying how much was left out. A
// reason quotes what a script printed or wrote, so without a bound a
// hostile results file or output would be copied whole into storage, logs
// and stderr.
const MaxReasonBytes = 4 << 10

// BoundReason returns reason within MaxReasonBytes.
func BoundReason(reason string) string {
	s, _ := capture.Bound(reason, MaxReasonBytes)
	return s
}
