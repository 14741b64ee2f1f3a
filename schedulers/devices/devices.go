// Package devices hands out device slots to trials run at once, as
// Auptimizer's CPU and GPU resource managers and SHiFT's device manager
// do: the number of slots bounds how many trials run at the same time, and
// each trial holds one slot (its GPUs, its CPU slot and cores) for its
// whole run, released whatever its outcome.
//
// A slot reaches only its own trial's processes: Slot.Context puts its
// environment (CUDA_VISIBLE_DEVICES) and its cores into the context that
// the services read (services.WithProcessEnv, services.WithCPUAffinity);
// Slot.Globals gives the $gpu_id, $cpu_slot and $device_slot variables for
// the scripts. See docs/devices.md.
package devices

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/benchtune/bench/services"
)

// Config says which devices to share out among trials. The zero Config
// sets no device limits (a pool of size 0).
type Config struct {
	// GPUs are GPU ids (indices or UUIDs, see ParseGPUs), e.g. from --gpus.
	GPUs []string
	// GPUsPerTrial is how many GPUs each slot gets (0 means 1). The
	// number of GPUs must be a multiple of it.
	GPUsPerTrial int
	// CPUSlots is the number of CPU slots (0: none).
	CPUSlots int
	// CoresPerSlot is how many cores each CPU slot is pinned to, with
	// PinCores (0: the available cores divided evenly among the slots).
	CoresPerSlot int
	// PinCores pins each CPU slot's processes to cores of its own: slot i
	// gets the available cores [i*CoresPerSlot, (i+1)*CoresPerSlot).
	PinCores bool
}

// spec is one slot's devices.
type spec struct {
	gpus    []string
	cpuSlot int
	cores   []int
}

// Pool hands out device slots. It is safe for concurrent use. A nil *Pool
// is a pool of size 0.
type Pool struct {
	specs []spec
	// free holds the ids of the free slots, least recently released
	// first; its capacity is the number of slots, so a release never
	// blocks.
	free  chan int
	inUse atomic.Int64
}

// NewPool checks cfg and builds its pool. Without GPUs and CPU slots the
// pool has size 0 (no device limits). With GPUs, there are
// len(GPUs)/GPUsPerTrial slots; with CPU slots, CPUSlots; with both, the
// smaller number, each slot getting both.
func NewPool(cfg Config) (*Pool, error) {
	specs, err := plan(cfg, allowedCPUs)
	if err != nil {
		return nil, err
	}
	p := &Pool{specs: specs, free: make(chan int, len(specs))}
	for i := range specs {
		p.free <- i
	}
	return p, nil
}

func firstCPUs(n int) []int {
	cores := make([]int, n)
	for i := range cores {
		cores[i] = i
	}
	return cores
}

// plan checks cfg and lays out the slots.
func plan(cfg Config, cpus func() []int) ([]spec, error) {
	switch {
	case cfg.GPUsPerTrial < 0:
		return nil, fmt.Errorf("devices: gpus_per_trial is %d; it must be 1 or more", cfg.GPUsPerTrial)
	case cfg.CPUSlots < 0:
		return nil, fmt.Errorf("devices: cpu_slots is %d; it must be 0 (no CPU slots) or more", cfg.CPUSlots)
	case cfg.CoresPerSlot < 0:
		return nil, fmt.Errorf("devices: cores_per_slot is %d; it must be 0 (an even share) or more", cfg.CoresPerSlot)
	}
	if err := checkGPUs(cfg.GPUs); err != nil {
		return nil, fmt.Errorf("devices: %w", err)
	}
	per := max(cfg.GPUsPerTrial, 1)
	n := -1 // number of slots; -1 until known
	if per > len(cfg.GPUs) && (len(cfg.GPUs) > 0 || per > 1) {
		return nil, fmt.Errorf("devices: gpus_per_trial is %d, but only %d GPUs are given (--gpus)", per, len(cfg.GPUs))
	}
	if len(cfg.GPUs) > 0 {
		if len(cfg.GPUs)%per != 0 {
			return nil, fmt.Errorf("devices: the %d GPUs given do not divide into slots of gpus_per_trial=%d GPUs; list a multiple of %d GPUs with --gpus",
				len(cfg.GPUs), per, per)
		}
		n = len(cfg.GPUs) / per
	}

	var cores []int
	coresPer := cfg.CoresPerSlot
	switch {
	case cfg.PinCores && cfg.CPUSlots == 0:
		return nil, fmt.Errorf("devices: pin_cores needs cpu_slots (how many CPU slots to pin)")
	case !cfg.PinCores && cfg.CoresPerSlot > 0:
		return nil, fmt.Errorf("devices: cores_per_slot is %d but pin_cores is off; set pin_cores to true to pin each CPU slot to its cores", cfg.CoresPerSlot)
	case cfg.PinCores && !pinSupported:
		return nil, fmt.Errorf("devices: pin_cores is supported on Linux only")
	case cfg.PinCores:
		cores = cpus()
		if coresPer == 0 {
			coresPer = len(cores) / cfg.CPUSlots
		}
		if coresPer == 0 || coresPer*cfg.CPUSlots > len(cores) {
			return nil, fmt.Errorf("devices: cpu_slots=%d × cores_per_slot=%d needs %d cores, but bench may use only %d (%s)",
				cfg.CPUSlots, max(coresPer, 1), cfg.CPUSlots*max(coresPer, 1), len(cores), coreList(cores))
		}
	}
	if cfg.CPUSlots > 0 && (n < 0 || cfg.CPUSlots < n) {
		n = cfg.CPUSlots
	}
	if n < 0 {
		return nil, nil // no device limits
	}
	specs := make([]spec, n)
	for i := range specs {
		s := spec{cpuSlot: -1}
		if len(cfg.GPUs) > 0 {
			s.gpus = slices.Clone(cfg.GPUs[i*per : (i+1)*per])
		}
		if cfg.CPUSlots > 0 {
			s.cpuSlot = i
		}
		if cfg.PinCores {
			s.cores = slices.Clone(cores[i*coresPer : (i+1)*coresPer])
		}
		specs[i] = s
	}
	return specs, nil
}

// Size is the number of slots: how many trials may run at once (0: no
// device limits are configured).
func (p *Pool) Size() int {
	if p == nil {
		return 0
	}
	return len(p.specs)
}

// InUse is the number of slots held now.
func (p *Pool) InUse() int {
	if p == nil {
		return 0
	}
	return int(p.inUse.Load())
}

// Acquire waits for a free slot and returns it; the caller must Release
// it, whatever happens. It hands out the least recently released slot, so
// that a retried trial tends to land on other devices. On a pool of size 0
// it returns nil, nil at once (no limits; a nil *Slot's methods return
// nothing). The error wraps ctx's error when ctx ends first.
func (p *Pool) Acquire(ctx context.Context) (*Slot, error) {
	if p.Size() == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("waiting for a device slot: %w", err)
	}
	select {
	case id := <-p.free:
		p.inUse.Add(1)
		s := p.specs[id]
		return &Slot{
			ID:      id,
			GPUs:    slices.Clone(s.gpus),
			CPUSlot: s.cpuSlot,
			Cores:   slices.Clone(s.cores),
			pool:    p,
		}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a device slot (all %d in use): %w", p.Size(), ctx.Err())
	}
}

// Release gives the slot back. Releasing a slot twice, a nil slot, or a
// slot of another pool does nothing; each Acquire's slot is its own lease,
// so a late second Release never frees a slot that another trial holds
// now.
func (p *Pool) Release(s *Slot) {
	if p == nil || s == nil || s.pool != p || !s.released.CompareAndSwap(false, true) {
		return
	}
	p.inUse.Add(-1)
	p.free <- s.ID
}

// Slot is one trial's lease of a device slot, from Acquire to Release.
// The methods of a nil *Slot (a pool of size 0) return nothing.
type Slot struct {
	// ID numbers the slot, from 0.
	ID int
	// GPUs are the slot's GPU ids (none without GPUs).
	GPUs []string
	// CPUSlot is the slot's CPU slot index, -1 without CPU slots.
	CPUSlot int
	// Cores are the cores the slot's processes are pinned to (none
	// without pin_cores).
	Cores []int

	pool     *Pool
	released atomic.Bool
}

// Env is the process environment of the slot's processes:
// CUDA_VISIBLE_DEVICES, the comma-joined GPU ids, when it has GPUs.
func (s *Slot) Env() map[string]string {
	if s == nil || len(s.GPUs) == 0 {
		return nil
	}
	return map[string]string{"CUDA_VISIBLE_DEVICES": strings.Join(s.GPUs, ",")}
}

// Globals are the slot's variables for the scripts: gpu_id (the
// comma-joined GPU ids, a string) when it has GPUs, cpu_slot (int64) when
// it has a CPU slot, and device_slot (int64, the slot id) always.
func (s *Slot) Globals() map[string]any {
	if s == nil {
		return nil
	}
	g := map[string]any{"device_slot": int64(s.ID)}
	if len(s.GPUs) > 0 {
		g["gpu_id"] = strings.Join(s.GPUs, ",")
	}
	if s.CPUSlot >= 0 {
		g["cpu_slot"] = int64(s.CPUSlot)
	}
	return g
}

// Context returns ctx carrying the slot's process environment
// (services.WithProcessEnv) and cores (services.WithCPUAffinity), so
// that the commands the trial runs with it, and only those, get its
// devices. A nil slot returns ctx.
func (s *Slot) Context(ctx context.Context) context.Context {
	if s == nil {
		return ctx
	}
	if env := s.Env(); len(env) > 0 {
		ctx = services.WithProcessEnv(ctx, env)
	}
	if len(s.Cores) > 0 {
		ctx = services.WithCPUAffinity(ctx, s.Cores)
	}
	return ctx
}

// String describes the slot for logs, e.g. "slot 1 (GPUs 2,3; CPU slot 1;
// cores 4,5)".
func (s *Slot) String() string {
	if s == nil {
		return "no device slot"
	}
	var parts []string
	if len(s.GPUs) > 0 {
		parts = append(parts, "GPUs "+strings.Join(s.GPUs, ","))
	}
	if s.CPUSlot >= 0 {
		parts = append(parts, "CPU slot "+strconv.Itoa(s.CPUSlot))
	}
	if len(s.Cores) > 0 {
		parts = append(parts, "cores "+coreList(s.Cores))
	}
	if len(parts) == 0 {
		return "slot " + strconv.Itoa(s.ID)
	}
	return "slot " + strconv.Itoa(s.ID) + " (" + strings.Join(parts, "; ") + ")"
}

func coreList(cores []int) string {
	parts := make([]string, len(cores))
	for i, c := range cores {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}
