package testutil

import (
	"strings"
	"sync"
	"testing"
)

// Writers on several goroutines and a reader at the same time (run with
// -race): every write is kept whole, and Reset empties the buffer.
func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if n, err := b.Write([]byte("line\n")); n != 5 || err != nil {
					t.Errorf("Write: %d, %v", n, err)
				}
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	s := b.String()
	if n := strings.Count(s, "line\n"); n != 800 || len(s) != 800*5 {
		t.Errorf("%d whole lines in %d bytes, want 800 in 4000", n, len(s))
	}
	b.Reset()
	if s := b.String(); s != "" {
		t.Errorf("after Reset: %q", s)
	}
}
