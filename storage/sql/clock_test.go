package sql

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/internal/clock"
)

// TestLeaseOnInjectedClock: with Config.Clock, leases are set and compared
// on that clock: a renewed lease holds past its first end, one left to run
// out is taken over, with no wall-clock wait.
func TestLeaseOnInjectedClock(t *testing.T) {
	forEach(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		fake := clock.NewFake(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
		cfg := b.fresh(t)
		cfg.Clock = fake.Now
		exp := newExperiment(t, open(t, cfg), "e")
		mustTrial(t, exp, map[string]string{"i": "1"})
		other, err := open(t, cfg).LoadExperiment(ctx, "e")
		if err != nil {
			t.Fatal(err)
		}
		const lease = time.Minute
		holder := exp.WithOwner("holder", lease)
		heir := other.WithOwner("heir", lease)
		if got := mustClaim(t, holder, 1); len(got) != 1 {
			t.Fatalf("claimed %v", ids(got))
		}
		// Renewed every 40 s for ten leases: never claimable.
		for range 15 {
			fake.Advance(40 * time.Second)
			if n, err := holder.Heartbeat(ctx); err != nil || n != 1 {
				t.Fatalf("Heartbeat = %d, %v", n, err)
			}
			if got := mustClaim(t, heir, 1); len(got) != 0 {
				t.Fatalf("a renewed lease was taken over at %v: %v", fake.Now(), ids(got))
			}
		}
		// Left to run out: still held just before its end, taken over after.
		fake.Advance(lease - time.Second)
		if got := mustClaim(t, heir, 1); len(got) != 0 {
			t.Fatalf("taken over before the lease ran out: %v", ids(got))
		}
		fake.Advance(2 * time.Second)
		got := mustClaim(t, heir, 1)
		if diff := cmp.Diff([]int{1}, ids(got)); diff != "" {
			t.Fatalf("claimed after the lease ran out (-want +got):\n%s", diff)
		}
		if want := fake.Now().Add(lease); !got[0].LeaseUntil.Equal(want.Truncate(time.Microsecond)) {
			t.Errorf("the heir's lease ends %v, want %v (the injected clock's now + lease)", got[0].LeaseUntil, want)
		}
	})
}
