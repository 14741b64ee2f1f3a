// Multi-fidelity: the fidelity key "checkpoint_store" (bench only).

package schedulers

import (
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/checkpoint"
)

// decodeCheckpointStore reads fidelity.checkpoint_store into f (after the
// promotion is known): an s3://bucket[/prefix] URL through which promotion
// "continue" stages each trial's checkpoint, so that it works where the
// trials share no file system with the driver (AWS Batch, Kubernetes, SSH
// pool hosts, network workers). It is refused with promotion "rerun",
// which keeps no checkpoint.
func decodeCheckpointStore(m map[string]any, ref source.Ref, f *FidelityConfig) []error {
	v, ok := m["checkpoint_store"]
	if !ok {
		return nil
	}
	at := ref.Child("checkpoint_store")
	s, isStr := v.(string)
	if !isStr {
		return []error{at.Errorf("fidelity.checkpoint_store must be an s3://bucket/prefix URL (a string), got %v", configs.PyStr(v))}
	}
	store, err := checkpoint.ParseStore(s)
	if err != nil {
		return []error{at.Errorf("fidelity.checkpoint_store: %v", err)}
	}
	if f.Promotion != PromotionContinue {
		return []error{at.Errorf("fidelity.checkpoint_store is used by \"promotion\": %q only (promotion is %q): remove it, or set the promotion", PromotionContinue, f.Promotion)}
	}
	f.CheckpointStore = store
	return nil
}
