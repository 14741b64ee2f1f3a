package trial

import "strings"

// PrunedMark is in the failure reason of every pruned trial (early
// stopping): the reason of the ErrPruned cause, "pruned: <why>", behind
// the runner's prefix ("run: pruned: ...").
const PrunedMark = "pruned: "

// IsPruned tells whether a stored trial was pruned: mlos_bench's Status
// has no PRUNED, so a pruned trial is stored CANCELED with a reason that
// holds PrunedMark.
func IsPruned(st Status, reason string) bool {
	return st == CANCELED && strings.Contains(reason, PrunedMark)
}
