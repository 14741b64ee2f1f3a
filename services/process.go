package services

import (
	"context"
	"maps"
	"slices"
)

// Per-trial process settings travel in the context, as the environments'
// Recorder does: bench runs many trials at once in one process, so a
// trial's device (CUDA_VISIBLE_DEVICES, a CPU mask) must reach only the
// processes that trial starts, never bench's own environment.

type processEnvKey struct{}

// WithProcessEnv returns a context whose local commands get env added to
// their process environment (see LocalExecService.LocalExec for the order
// of precedence). Nested calls merge; the inner (later) values win. env is
// copied.
func WithProcessEnv(ctx context.Context, env map[string]string) context.Context {
	merged := maps.Clone(ProcessEnvFrom(ctx))
	if merged == nil {
		merged = make(map[string]string, len(env))
	}
	maps.Copy(merged, env)
	return context.WithValue(ctx, processEnvKey{}, merged)
}

// ProcessEnvFrom returns a copy of the process environment of ctx, or nil.
func ProcessEnvFrom(ctx context.Context) map[string]string {
	env, _ := ctx.Value(processEnvKey{}).(map[string]string)
	if len(env) == 0 {
		return nil
	}
	return maps.Clone(env)
}

type cpuAffinityKey struct{}

// WithCPUAffinity returns a context whose local commands run pinned to the
// given CPU cores (numbered as the kernel numbers them): every process a
// command starts inherits the mask. An empty list removes the pinning.
// cores is copied.
func WithCPUAffinity(ctx context.Context, cores []int) context.Context {
	return context.WithValue(ctx, cpuAffinityKey{}, slices.Clone(cores))
}

// CPUAffinityFrom returns a copy of the cores of ctx, or nil when its
// commands are not pinned.
func CPUAffinityFrom(ctx context.Context) []int {
	cores, _ := ctx.Value(cpuAffinityKey{}).([]int)
	if len(cores) == 0 {
		return nil
	}
	return slices.Clone(cores)
}
