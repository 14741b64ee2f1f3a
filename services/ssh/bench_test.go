package ssh

import (
	"context"
	"testing"

	"github.com/benchtune/bench/services"
)

// BenchmarkRemoteExec measures a trivial script's round trip on a cached
// connection: write, start, follow and clean up a detached run.
func BenchmarkRemoteExec(b *testing.B) {
	e := getEnv(b)
	s := newHost(b, e)
	req := services.RemoteExecRequest{Script: []string{"echo hi"}, Params: e.params()}
	if _, err := s.RemoteExec(context.Background(), req); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.RemoteExec(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionRun is the baseline: one plain SSH session running the
// same command on the same cached connection.
func BenchmarkSessionRun(b *testing.B) {
	e := getEnv(b)
	s := newHost(b, e)
	c, err := s.pool.get(context.Background(), mustTarget(b, s, e))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.run(context.Background(), "echo hi", nil); err != nil {
			b.Fatal(err)
		}
	}
}
