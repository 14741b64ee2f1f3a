package services

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestProcessEnvMerges(t *testing.T) {
	ctx := context.Background()
	if got := ProcessEnvFrom(ctx); got != nil {
		t.Fatalf("empty context: %v", got)
	}
	outer := map[string]string{"CUDA_VISIBLE_DEVICES": "0", "A": "outer"}
	ctx1 := WithProcessEnv(ctx, outer)
	ctx2 := WithProcessEnv(ctx1, map[string]string{"A": "inner", "B": "b"})
	outer["A"] = "changed after the call" // copied: no effect

	if diff := cmp.Diff(map[string]string{"CUDA_VISIBLE_DEVICES": "0", "A": "outer"}, ProcessEnvFrom(ctx1)); diff != "" {
		t.Errorf("outer (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"CUDA_VISIBLE_DEVICES": "0", "A": "inner", "B": "b"}, ProcessEnvFrom(ctx2)); diff != "" {
		t.Errorf("inner (-want +got):\n%s", diff)
	}
	// The returned map is a copy.
	got := ProcessEnvFrom(ctx2)
	got["B"] = "x"
	if ProcessEnvFrom(ctx2)["B"] != "b" {
		t.Error("ProcessEnvFrom returned the context's own map")
	}
}

func TestCPUAffinity(t *testing.T) {
	ctx := context.Background()
	if got := CPUAffinityFrom(ctx); got != nil {
		t.Fatalf("empty context: %v", got)
	}
	cores := []int{2, 3}
	ctx1 := WithCPUAffinity(ctx, cores)
	cores[0] = 7
	if diff := cmp.Diff([]int{2, 3}, CPUAffinityFrom(ctx1)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := CPUAffinityFrom(WithCPUAffinity(ctx1, nil)); got != nil {
		t.Errorf("an empty list should remove the pinning, got %v", got)
	}
}
