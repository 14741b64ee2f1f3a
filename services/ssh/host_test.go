package ssh

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"strings"
	"testing"
	"time"
)

// TestHostDetached starts a detached run, drops the connection while it
// runs, follows it to its exit code with DetachedState, and checks the
// file helpers.
func TestHostDetached(t *testing.T) {
	e := getEnv(t)
	s := newHost(t, e)
	h, err := s.Host(e.params())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	home, err := h.Home(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := path.Join(home, ".bench/host-test-"+uniq(t))
	t.Cleanup(func() { _ = h.RemoveAll(context.Background(), dir) })

	if err := h.WriteFile(ctx, path.Join(dir, "in", "req.json"), []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if info, err := h.Stat(ctx, path.Join(dir, "in", "req.json")); err != nil || info.Mode().Perm() != 0o600 || info.Size() != 7 {
		t.Fatalf("Stat: %v %v", info, err)
	}
	if _, err := h.ReadFile(ctx, path.Join(dir, "nope"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}
	if st, err := h.DetachedState(ctx, path.Join(dir, "run")); err != nil || st.Exists {
		t.Errorf("state of a missing run: %+v %v", st, err)
	}

	run := path.Join(dir, "run")
	script := "cat " + path.Join(dir, "in", "req.json") + "\necho err >&2\nsleep 1\necho done\nexit 3\n"
	if err := h.StartDetached(ctx, run, script); err != nil {
		t.Fatal(err)
	}
	s.CloseConnections()
	deadline := time.Now().Add(20 * time.Second)
	sawAlive := false
	var st DetachedState
	for time.Now().Before(deadline) {
		st, err = h.DetachedState(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		sawAlive = sawAlive || st.Alive
		if st.Exited {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !st.Exited || st.ExitCode != 3 || !sawAlive || st.OutputSize != int64(len("{\"a\":1}done\n")+len("err\n")) {
		t.Fatalf("final state %+v (saw alive: %v)", st, sawAlive)
	}
	if peek, err := h.PeekDetached(ctx, run); err != nil || peek != st {
		t.Errorf("PeekDetached: %+v %v, want %+v", peek, err, st)
	}
	if peek, err := h.PeekDetached(ctx, path.Join(dir, "nope")); err != nil || peek.Exists {
		t.Errorf("PeekDetached of a missing run: %+v %v", peek, err)
	}
	tail, size, err := h.ReadTail(ctx, path.Join(run, "stdout"), 5)
	if err != nil || string(tail) != "done\n" || size != int64(len(`{"a":1}done`)+1) {
		t.Errorf("ReadTail: %q %d %v", tail, size, err)
	}
	if err := h.StartDetached(ctx, run, script); !errors.Is(err, ErrRunDirInUse) {
		t.Errorf("second start in the same directory: %v, want ErrRunDirInUse", err)
	}
	// Killing a run that ended is not an error.
	if err := h.KillDetached(ctx, run); err != nil {
		t.Error(err)
	}

	// Kill a running one: its processes go, and no exit code is written.
	run2 := path.Join(dir, "run2")
	if err := h.StartDetached(ctx, run2, "sleep 60\n"); err != nil {
		t.Fatal(err)
	}
	for {
		st, err = h.DetachedState(ctx, run2)
		if err != nil || st.Alive {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.KillDetached(ctx, run2); err != nil {
		t.Fatal(err)
	}
	if st, err := h.DetachedState(ctx, run2); err != nil || !st.Gone() {
		t.Errorf("after KillDetached: %+v %v, want gone", st, err)
	}
	if err := h.StartDetached(ctx, "relative/run", "true"); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("relative run directory: %v", err)
	}
}
