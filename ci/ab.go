package ci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// A/B orders of the runs of a baseline and a candidate in one job.
const (
	// OrderAlternate runs A B A B ...
	OrderAlternate = "alternate"
	// OrderRandomBlocks runs blocks of one A and one B, each block in a
	// random order (AB or BA, a seeded coin): a drift that follows the
	// alternation cannot favour one side.
	OrderRandomBlocks = "random"
)

// ABCommand is one side of an A/B run of commands.
type ABCommand struct {
	Label   string
	Command string // run with sh -c, in Dir
}

// ABOptions tune RunAB.
type ABOptions struct {
	Baseline, Candidate ABCommand
	Order               string
	Dir                 string
	// Timeout of one run (0: none).
	Timeout time.Duration
	Seed    uint64
	// Log gets a line per run (nil: none).
	Log io.Writer
}

// ABRunner runs the two commands of an A/B job in interleaved blocks and
// keeps their measurements: wall_s (wall-clock seconds), cpu_user_s,
// cpu_sys_s (CPU time of the command and the children it waited for)
// and max_rss_mb (peak resident memory of the largest of them).
type ABRunner struct {
	o      ABOptions
	rng    *rand.Rand
	Base   *Samples
	Cur    *Samples
	blocks int
}

// NewABRunner prepares an A/B job.
func NewABRunner(o ABOptions) (*ABRunner, error) {
	if o.Baseline.Command == "" || o.Candidate.Command == "" {
		return nil, errors.New("an A/B job needs both a baseline and a candidate command")
	}
	switch o.Order {
	case "":
		o.Order = OrderAlternate
	case OrderAlternate, OrderRandomBlocks:
	default:
		return nil, fmt.Errorf("unknown A/B order %q: use alternate or random", o.Order)
	}
	r := &ABRunner{o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x6162))}
	r.Base = &Samples{Name: o.Baseline.Label, Configs: []ConfigSamples{{Key: "ab", Label: "A/B", Values: map[string][]float64{}}}}
	r.Cur = &Samples{Name: o.Candidate.Label, Configs: []ConfigSamples{{Key: "ab", Label: "A/B", Values: map[string][]float64{}}}}
	return r, nil
}

// Blocks counts the blocks run so far.
func (r *ABRunner) Blocks() int { return r.blocks }

// RunBlocks runs n more blocks (one run of each side per block).
func (r *ABRunner) RunBlocks(ctx context.Context, n int) error {
	for range n {
		first, second := 0, 1
		if r.o.Order == OrderRandomBlocks && r.rng.IntN(2) == 1 {
			first, second = 1, 0
		}
		for _, side := range []int{first, second} {
			cmd, dst := r.o.Baseline, r.Base
			if side == 1 {
				cmd, dst = r.o.Candidate, r.Cur
			}
			m, err := measure(ctx, cmd.Command, r.o.Dir, r.o.Timeout)
			if err != nil {
				return fmt.Errorf("%s (%s), run %d: %w", cmd.Label, cmd.Command, r.blocks+1, err)
			}
			c := &dst.Configs[0]
			c.Trials++
			for k, v := range m {
				c.Values[k] = append(c.Values[k], v)
			}
			if r.o.Log != nil {
				fmt.Fprintf(r.o.Log, "bench ci: %s run %d: wall %.4gs, user %.4gs, sys %.4gs\n", cmd.Label, c.Trials, m["wall_s"], m["cpu_user_s"], m["cpu_sys_s"])
			}
		}
		r.blocks++
	}
	return nil
}

// limitWriter keeps the first n bytes.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
