package devices

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
)

// eight is a machine whose bench may use cores 0-3 and 8-11.
func eight() []int { return []int{0, 1, 2, 3, 8, 9, 10, 11} }

func TestPlan(t *testing.T) {
	type slot struct {
		GPUs    []string
		CPUSlot int
		Cores   []int
	}
	tests := []struct {
		name    string
		cfg     Config
		want    []slot
		wantErr string
	}{
		{name: "nothing: no limits", cfg: Config{}, want: nil},
		{name: "gpus_per_trial alone is 1 by default", cfg: Config{GPUsPerTrial: 1}, want: nil},
		{name: "one GPU each", cfg: Config{GPUs: []string{"0", "1", "3"}},
			want: []slot{{[]string{"0"}, -1, nil}, {[]string{"1"}, -1, nil}, {[]string{"3"}, -1, nil}}},
		{name: "two GPUs each", cfg: Config{GPUs: []string{"0", "1", "2", "3"}, GPUsPerTrial: 2},
			want: []slot{{[]string{"0", "1"}, -1, nil}, {[]string{"2", "3"}, -1, nil}}},
		{name: "UUIDs", cfg: Config{GPUs: []string{"GPU-a", "GPU-b"}},
			want: []slot{{[]string{"GPU-a"}, -1, nil}, {[]string{"GPU-b"}, -1, nil}}},
		{name: "CPU slots", cfg: Config{CPUSlots: 3},
			want: []slot{{nil, 0, nil}, {nil, 1, nil}, {nil, 2, nil}}},
		{name: "CPU slots pinned", cfg: Config{CPUSlots: 3, CoresPerSlot: 2, PinCores: true},
			want: []slot{{nil, 0, []int{0, 1}}, {nil, 1, []int{2, 3}}, {nil, 2, []int{8, 9}}}},
		{name: "pinned, even share by default", cfg: Config{CPUSlots: 3, PinCores: true},
			want: []slot{{nil, 0, []int{0, 1}}, {nil, 1, []int{2, 3}}, {nil, 2, []int{8, 9}}}},
		{name: "pinned, all cores", cfg: Config{CPUSlots: 2, CoresPerSlot: 4, PinCores: true},
			want: []slot{{nil, 0, []int{0, 1, 2, 3}}, {nil, 1, []int{8, 9, 10, 11}}}},
		{name: "GPUs and CPU slots: the fewer, each with both",
			cfg:  Config{GPUs: []string{"0", "1", "2"}, CPUSlots: 2, CoresPerSlot: 1, PinCores: true},
			want: []slot{{[]string{"0"}, 0, []int{0}}, {[]string{"1"}, 1, []int{1}}}},
		{name: "GPUs fewer than CPU slots",
			cfg:  Config{GPUs: []string{"5", "7"}, CPUSlots: 4},
			want: []slot{{[]string{"5"}, 0, nil}, {[]string{"7"}, 1, nil}}},

		{name: "negative gpus_per_trial", cfg: Config{GPUs: []string{"0"}, GPUsPerTrial: -1}, wantErr: "gpus_per_trial is -1"},
		{name: "negative cpu_slots", cfg: Config{CPUSlots: -2}, wantErr: "cpu_slots is -2"},
		{name: "negative cores_per_slot", cfg: Config{CPUSlots: 1, CoresPerSlot: -1, PinCores: true}, wantErr: "cores_per_slot is -1"},
		{name: "more GPUs per trial than GPUs", cfg: Config{GPUs: []string{"0", "1"}, GPUsPerTrial: 3},
			wantErr: "gpus_per_trial is 3, but only 2 GPUs are given"},
		{name: "GPUs per trial without GPUs", cfg: Config{GPUsPerTrial: 2}, wantErr: "gpus_per_trial is 2, but only 0 GPUs"},
		{name: "GPUs do not divide", cfg: Config{GPUs: []string{"0", "1", "2"}, GPUsPerTrial: 2},
			wantErr: "the 3 GPUs given do not divide into slots of gpus_per_trial=2"},
		{name: "duplicate GPU", cfg: Config{GPUs: []string{"0", "1", "0"}}, wantErr: "GPU 0 is listed twice"},
		{name: "empty GPU id", cfg: Config{GPUs: []string{"0", ""}}, wantErr: `GPU id "" (item 2)`},
		{name: "GPU id with a comma", cfg: Config{GPUs: []string{"0,1"}}, wantErr: `GPU id "0,1"`},
		{name: "pin_cores without cpu_slots", cfg: Config{PinCores: true}, wantErr: "pin_cores needs cpu_slots"},
		{name: "cores_per_slot without pin_cores", cfg: Config{CPUSlots: 2, CoresPerSlot: 2},
			wantErr: "cores_per_slot is 2 but pin_cores is off"},
		{name: "too many cores", cfg: Config{CPUSlots: 3, CoresPerSlot: 3, PinCores: true},
			wantErr: "cpu_slots=3 × cores_per_slot=3 needs 9 cores, but bench may use only 8 (0,1,2,3,8,9,10,11)"},
		{name: "more pinned slots than cores", cfg: Config{CPUSlots: 9, PinCores: true},
			wantErr: "cpu_slots=9 × cores_per_slot=1 needs 9 cores, but bench may use only 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			specs, err := plan(tc.cfg, eight)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "devices: ") {
					t.Errorf("error %q does not say where it comes from", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []slot
			for _, s := range specs {
				got = append(got, slot{s.gpus, s.cpuSlot, s.cores})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewPoolThisMachine(t *testing.T) {
	n := runtime.NumCPU()
	p, err := NewPool(Config{CPUSlots: n, CoresPerSlot: 1, PinCores: true})
	if runtime.GOOS != "linux" {
		if err == nil || !strings.Contains(err.Error(), "Linux only") {
			t.Fatalf("err = %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.Size() != n {
		t.Errorf("Size = %d, want %d", p.Size(), n)
	}
	if _, err := NewPool(Config{CPUSlots: n + 1, CoresPerSlot: 1, PinCores: true}); err == nil {
		t.Errorf("%d pinned slots of one core on %d cores: no error", n+1, n)
	}
	if _, err := NewPool(Config{CPUSlots: 1, CoresPerSlot: n + 1, PinCores: true}); err == nil {
		t.Errorf("a slot of %d cores on %d cores: no error", n+1, n)
	}
}

func TestSlot(t *testing.T) {
	p, err := NewPool(Config{GPUs: []string{"0", "1", "2", "3"}, GPUsPerTrial: 2, CPUSlots: 2})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(s)
	if s.ID != 0 || s.CPUSlot != 0 || !cmp.Equal(s.GPUs, []string{"0", "1"}) || s.Cores != nil {
		t.Errorf("slot = %+v", s)
	}
	if diff := cmp.Diff(map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}, s.Env()); diff != "" {
		t.Errorf("Env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"gpu_id": "0,1", "cpu_slot": int64(0), "device_slot": int64(0)}, s.Globals()); diff != "" {
		t.Errorf("Globals (-want +got):\n%s", diff)
	}
	if got := s.String(); got != "slot 0 (GPUs 0,1; CPU slot 0)" {
		t.Errorf("String = %q", got)
	}
	ctx := s.Context(context.Background())
	if diff := cmp.Diff(map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}, services.ProcessEnvFrom(ctx)); diff != "" {
		t.Errorf("Context's env (-want +got):\n%s", diff)
	}
	if c := services.CPUAffinityFrom(ctx); c != nil {
		t.Errorf("Context pins to %v without pin_cores", c)
	}
	// The lease's slices are its own.
	s.GPUs[0] = "changed"
	s2, _ := p.Acquire(context.Background())
	p.Release(s2)
	p.Release(s)
	s3, _ := p.Acquire(context.Background()) // slot 1 (least recently released), then 0
	s4, _ := p.Acquire(context.Background())
	if s4.ID != 0 || s4.GPUs[0] != "0" {
		t.Errorf("the pool's GPUs changed with a lease's: %+v", s4)
	}
	p.Release(s3)
	p.Release(s4)
}

func TestSlotCPUOnly(t *testing.T) {
	p, err := NewPool(Config{CPUSlots: 1, CoresPerSlot: 1, PinCores: pinSupported})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := p.Acquire(context.Background())
	defer p.Release(s)
	if s.Env() != nil {
		t.Errorf("Env = %v without GPUs", s.Env())
	}
	if diff := cmp.Diff(map[string]any{"cpu_slot": int64(0), "device_slot": int64(0)}, s.Globals()); diff != "" {
		t.Errorf("Globals (-want +got):\n%s", diff)
	}
	if pinSupported {
		ctx := s.Context(context.Background())
		if got := services.CPUAffinityFrom(ctx); !cmp.Equal(got, s.Cores) || len(got) != 1 {
			t.Errorf("Context pins to %v, want the slot's cores %v", got, s.Cores)
		}
		if services.ProcessEnvFrom(ctx) != nil {
			t.Errorf("Context env = %v", services.ProcessEnvFrom(ctx))
		}
	}
}

func TestNoLimits(t *testing.T) {
	for _, p := range []*Pool{nil, mustPool(t, Config{})} {
		if p.Size() != 0 || p.InUse() != 0 {
			t.Errorf("Size %d, InUse %d", p.Size(), p.InUse())
		}
		s, err := p.Acquire(context.Background())
		if s != nil || err != nil {
			t.Errorf("Acquire = %v, %v; want nil, nil", s, err)
		}
		p.Release(s)
		if s.Env() != nil || s.Globals() != nil || s.String() != "no device slot" {
			t.Error("a nil slot should have nothing")
		}
		ctx := context.Background()
		if s.Context(ctx) != ctx {
			t.Error("a nil slot's Context should be ctx")
		}
	}
}

func mustPool(t *testing.T, cfg Config) *Pool {
	t.Helper()
	p, err := NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func gpus(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i)
	}
	return out
}

// The least recently released slot is handed out first.
func TestAcquireOrder(t *testing.T) {
	p := mustPool(t, Config{GPUs: gpus(3)})
	ctx := context.Background()
	var held []*Slot
	for range 3 {
		s, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	if ids := []int{held[0].ID, held[1].ID, held[2].ID}; !cmp.Equal(ids, []int{0, 1, 2}) {
		t.Errorf("first ids %v", ids)
	}
	p.Release(held[2])
	p.Release(held[0])
	p.Release(held[1])
	var order []int
	for range 3 {
		s, _ := p.Acquire(ctx)
		order = append(order, s.ID)
		defer p.Release(s)
	}
	if !cmp.Equal(order, []int{2, 0, 1}) {
		t.Errorf("order %v, want the release order 2 0 1", order)
	}

	// A retry lands on another device: release 0, the next gets 1.
	p2 := mustPool(t, Config{GPUs: gpus(2)})
	a, _ := p2.Acquire(ctx)
	p2.Release(a)
	b, _ := p2.Acquire(ctx)
	if b.ID == a.ID {
		t.Errorf("the retry got the slot just released (%d)", a.ID)
	}
	p2.Release(b)
}

func TestReleaseIsIdempotent(t *testing.T) {
	p := mustPool(t, Config{GPUs: gpus(1)})
	other := mustPool(t, Config{GPUs: gpus(1)})
	ctx := context.Background()
	a, _ := p.Acquire(ctx)
	p.Release(a)
	p.Release(a)
	b, _ := p.Acquire(ctx) // the same slot, another lease
	p.Release(a)           // a late release of the old lease: no effect
	if p.InUse() != 1 {
		t.Fatalf("InUse = %d after a stale release, want 1", p.InUse())
	}
	other.Release(b) // another pool's release: no effect
	if p.InUse() != 1 {
		t.Fatalf("InUse = %d after a foreign release", p.InUse())
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if s, err := p.Acquire(short); err == nil {
		t.Fatalf("acquired %v while the only slot is held", s)
	}
	p.Release(b)
	if p.InUse() != 0 {
		t.Errorf("InUse = %d", p.InUse())
	}
}

func TestAcquireCancel(t *testing.T) {
	p := mustPool(t, Config{CPUSlots: 1})
	held, _ := p.Acquire(context.Background())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		s, err := p.Acquire(ctx)
		p.Release(s)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for a device slot (all 1 in use)") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Acquire did not return after the cancel")
	}

	// A deadline; and an already-ended context fails even with a free slot.
	dl, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	if _, err := p.Acquire(dl); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: err = %v", err)
	}
	p.Release(held)
	if s, err := p.Acquire(ctx); s != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("ended context: %v, %v", s, err)
	}
	if p.InUse() != 0 {
		t.Errorf("InUse = %d", p.InUse())
	}
}

// Many trials acquire and release at random: never more than Size run at
// once, no slot is held twice, every path releases, and all slots are free
// at the end.
func TestConcurrencyBound(t *testing.T) {
	for _, cfg := range []Config{
		{GPUs: gpus(1)},
		{GPUs: gpus(3)},
		{GPUs: gpus(4), GPUsPerTrial: 2},
		{CPUSlots: 5},
		{GPUs: gpus(4), CPUSlots: 3},
	} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			p := mustPool(t, cfg)
			size := p.Size()
			var running, peak atomic.Int64
			holder := make([]atomic.Int64, size) // goroutine+1 holding each slot
			var wg sync.WaitGroup
			var failures atomic.Int64
			for g := range 24 {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(g), 7))
					for range 40 {
						ctx := context.Background()
						var cancel context.CancelFunc = func() {}
						if rng.IntN(4) == 0 { // some give up waiting
							ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(300))*time.Microsecond)
						}
						s, err := p.Acquire(ctx)
						cancel()
						if err != nil {
							continue
						}
						func() {
							defer p.Release(s) // released whatever happens
							if n := running.Add(1); n > peak.Load() {
								peak.Store(n) // racy max is fine: checked below too
							}
							if n := running.Load(); n > int64(size) {
								failures.Add(1)
							}
							if !holder[s.ID].CompareAndSwap(0, int64(g+1)) {
								failures.Add(1)
							}
							time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
							holder[s.ID].Store(0)
							running.Add(-1)
							if rng.IntN(5) == 0 {
								p.Release(s) // an early release; the deferred one is a no-op
							}
						}()
					}
				})
			}
			wg.Wait()
			if failures.Load() > 0 {
				t.Errorf("%d times more than %d slots were in use, or a slot was held twice", failures.Load(), size)
			}
			if peak.Load() > int64(size) {
				t.Errorf("peak %d > size %d", peak.Load(), size)
			}
			if p.InUse() != 0 {
				t.Errorf("InUse = %d at the end", p.InUse())
			}
			// Every slot is free again.
			for range size {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				s, err := p.Acquire(ctx)
				cancel()
				if err != nil {
					t.Fatalf("a slot was not given back: %v", err)
				}
				defer p.Release(s)
			}
		})
	}
}
