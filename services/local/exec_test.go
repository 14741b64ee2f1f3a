package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/capture"
	"github.com/benchtune/bench/internal/reaper"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
)

// testOptions keep the kill grace and the drain timeout short.
func testOptions(searchPath ...string) Options {
	return Options{SearchPath: searchPath, KillGrace: 300 * time.Millisecond, DrainTimeout: 300 * time.Millisecond}
}

func newExec(t testing.TB, cfg Config, opts Options) *LocalExecService {
	t.Helper()
	svc, err := NewLocalExec(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Its spare temp folder goes with it.
	t.Cleanup(func() { _ = svc.Close() })
	return svc
}

func run(t testing.TB, svc *LocalExecService, req services.ExecRequest) services.ExecResult {
	t.Helper()
	res, err := svc.LocalExec(context.Background(), req)
	if err != nil {
		t.Fatalf("LocalExec: %v", err)
	}
	return res
}

// outputs returns the stdout of each line.
func outputs(res services.ExecResult) []string {
	var out []string
	for _, l := range res.Lines {
		out = append(out, l.Stdout)
	}
	return out
}

func TestLocalExecLines(t *testing.T) {
	dir := t.TempDir()
	svc := newExec(t, DefaultConfig(), testOptions())
	res := run(t, svc, services.ExecRequest{
		Dir:   dir,
		Lines: []string{"echo hello", "echo oops >&2; echo world", "exit 0"},
	})
	if res.ExitCode != 0 || res.Stdout != "hello\nworld\n" || res.Stderr != "oops\n" {
		t.Errorf("result = %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	want := []services.LineResult{
		{Line: "echo hello", Stdout: "hello\n"},
		{Line: "echo oops >&2; echo world", Stdout: "world\n", Stderr: "oops\n"},
		{Line: "exit 0"},
	}
	for i := range res.Lines {
		if res.Lines[i].Duration <= 0 {
			t.Errorf("line %d: duration %v", i, res.Lines[i].Duration)
		}
		if res.Lines[i].Start.IsZero() {
			t.Errorf("line %d: no start time", i)
		}
		if runtime.GOOS == "linux" && res.Lines[i].MaxRSSBytes <= 0 {
			t.Errorf("line %d: max RSS %d", i, res.Lines[i].MaxRSSBytes)
		}
		res.Lines[i].Duration = 0
		res.Lines[i].Start = time.Time{}
		res.Lines[i].UserCPU, res.Lines[i].SysCPU, res.Lines[i].MaxRSSBytes = 0, 0, 0
	}
	if diff := cmp.Diff(want, res.Lines); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

func TestLocalExecLinesDoNotShareState(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	res := run(t, svc, services.ExecRequest{
		Dir: dir,
		Lines: []string{
			"cd sub && pwd",
			"pwd",
			"export FOO=set; X=1; echo ${FOO}${X}",
			"echo ${FOO:-unset}${X:-unset}",
		},
	})
	want := []string{filepath.Join(dir, "sub") + "\n", dir + "\n", "set1\n", "unsetunset\n"}
	if diff := cmp.Diff(want, outputs(res)); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

// Values reach the lines through the environment only, in both ways of
// handing lines to the shell: hostile values are never run.
func TestLocalExecEnvironment(t *testing.T) {
	for _, verbatim := range []bool{false, true} {
		t.Run(fmt.Sprintf("verbatim=%t", verbatim), func(t *testing.T) {
			testLocalExecEnvironment(t, verbatim)
		})
	}
}

func testLocalExecEnvironment(t *testing.T, verbatim bool) {
	dir := t.TempDir()
	t.Setenv("BENCH_TEST_PARENT_VAR", "from-parent")
	t.Setenv("BENCH_TEST_OVERRIDDEN", "parent")
	marker := filepath.Join(dir, "pwned")
	hostile := map[string]string{
		"QUOTES":   `it's "quoted" \ back\slash`,
		"SUBST":    "$(touch " + marker + ") `touch " + marker + "` ${HOME}",
		"NEWLINES": "line1\nline2; touch " + marker + "\n",
		"SEMI":     "'; touch " + marker + "; echo '",
		"EMPTY":    "",
		"UNICODE":  "héllo wörld ✓",
	}
	env := map[string]string{"BENCH_TEST_OVERRIDDEN": "child"}
	var lines []string
	for k, v := range hostile {
		env[k] = v
		if verbatim {
			lines = append(lines, fmt.Sprintf(`printf '%%s' "$%s" > %s.out`, k, k))
		} else {
			// The single quotes keep the double quotes for the shell.
			lines = append(lines, fmt.Sprintf(`printf %%s '"$%s"' > %s.out`, k, k))
		}
	}
	lines = append(lines, `echo "$BENCH_TEST_PARENT_VAR $BENCH_TEST_OVERRIDDEN"`)
	if !verbatim {
		// Unquoted for the shell: split into words, but still not run.
		lines = append(lines, `printf '[%s]' "$SEMI" "$SUBST" > split.out`)
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	res := run(t, svc, services.ExecRequest{Dir: dir, Env: env, Lines: lines, Verbatim: verbatim})
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d, stderr %q", res.ExitCode, res.Stderr)
	}
	for k, v := range hostile {
		got, err := os.ReadFile(filepath.Join(dir, k+".out"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != v {
			t.Errorf("%s arrived as %q, want %q", k, got, v)
		}
	}
	if !verbatim {
		got, err := os.ReadFile(filepath.Join(dir, "split.out"))
		if err != nil {
			t.Fatal(err)
		}
		want := "[';][touch][" + marker + ";][echo][']" +
			"[$(touch][" + marker + ")][`touch][" + marker + "`][${HOME}]"
		if string(got) != want {
			t.Errorf("unquoted values: %q, want %q", got, want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a value was executed: %s exists", marker)
	}
	if !strings.HasPrefix(res.Stdout, "from-parent child\n") {
		t.Errorf("stdout %q", res.Stdout)
	}
}

func TestLocalExecRejectsBadEnvNames(t *testing.T) {
	for _, name := range []string{"", "A-B", "1A", "A B", "A=B", "a.b", "$(x)"} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			dir := t.TempDir()
			svc := newExec(t, DefaultConfig(), testOptions())
			res, err := svc.LocalExec(context.Background(), services.ExecRequest{
				Dir: dir, Env: map[string]string{name: "secret-value"}, Lines: []string{"touch ran"},
			})
			if err == nil || !strings.Contains(err.Error(), "not a valid shell identifier") {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(err.Error(), "secret-value") {
				t.Errorf("the error shows the value: %v", err)
			}
			if len(res.Lines) != 0 {
				t.Errorf("lines ran: %+v", res.Lines)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the line ran")
			}
		})
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	_, err := svc.LocalExec(context.Background(), services.ExecRequest{
		Dir: t.TempDir(), Env: map[string]string{"NUL": "a\x00secret"}, Lines: []string{"true"},
	})
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("NUL value: err = %v", err)
	}
}

func TestLocalExecAbortOnError(t *testing.T) {
	lines := []string{"echo hello", "false", "echo world"}
	tests := []struct {
		name     string
		abort    bool
		lines    []string
		code     int
		stdout   string
		numLines int
	}{
		{"abort", true, lines, 1, "hello\n", 2},
		{"continue", false, lines, 0, "hello\nworld\n", 3},
		{"continue, last fails", false, []string{"exit 3", "echo x", "exit 4"}, 4, "x\n", 3},
		{"abort, exit code kept", true, []string{"exit 42", "echo never"}, 42, "", 1},
		{"killed by a signal", true, []string{"kill -KILL $$"}, 128 + 9, "", 1},
		{"command not found", true, []string{"no-such-command-bench-test"}, 127, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.AbortOnError = tc.abort
			svc := newExec(t, cfg, testOptions())
			res := run(t, svc, services.ExecRequest{Dir: t.TempDir(), Lines: tc.lines})
			if res.ExitCode != tc.code || res.Stdout != tc.stdout || len(res.Lines) != tc.numLines {
				t.Errorf("got exit %d, stdout %q, %d lines; want %d, %q, %d", res.ExitCode, res.Stdout, len(res.Lines), tc.code, tc.stdout, tc.numLines)
			}
		})
	}
}

// With bench_shell_lines "verbatim", only the command words are
// resolved, and quotes mean what they mean to the shell.
func TestLocalExecSearchPathVerbatim(t *testing.T) {
	cfgDir := t.TempDir()
	args := "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done; echo\n"
	writeFile(t, filepath.Join(cfgDir, "scripts/args.sh"), args, 0o755)
	writeFile(t, filepath.Join(cfgDir, "scripts/env.sh"), "#!/bin/sh\necho \"[$V]\"\n", 0o755)
	writeFile(t, filepath.Join(cfgDir, "scripts/noexec.sh"), "#!/bin/sh\necho \"noexec $1 $0\"\n", 0o644)
	writeFile(t, filepath.Join(cfgDir, "scripts/bare.sh"), "echo \"bare $1\"\n", 0o600)
	writeFile(t, filepath.Join(cfgDir, "scripts/args.py"),
		"import sys\nprint(''.join('[%s]' % a for a in sys.argv[1:]))\n", 0o644)
	work := t.TempDir()
	svc := newExec(t, DefaultConfig(), testOptions(cfgDir))

	lines := []string{
		`scripts/args.sh 'a  b' "c'd" "$V" e\ f '$V' && echo ok`,
		`V=local scripts/env.sh`,
		`scripts/noexec.sh x`,
		`scripts/bare.sh y`,
		// mlos_bench strips these quotes and so expands $V; verbatim
		// lines do not.
		`echo 'x,$V'`,
		// A quoted command word is the shell's: not resolved, not found.
		`'scripts/args.sh' 2>/dev/null || echo not-found`,
	}
	want := []string{
		"[a  b][c'd][v a l][e f][$V]\nok\n",
		"[local]\n",
		"noexec x " + filepath.Join(cfgDir, "scripts/noexec.sh") + "\n",
		"bare y\n",
		"x,$V\n",
		"not-found\n",
	}
	if _, err := exec.LookPath("python3"); err == nil {
		lines = append(lines, `scripts/args.py 'p q' "$V" | cat`)
		want = append(want, "[p q][v a l]\n")
	} else {
		t.Log("python3 is not installed: .py resolution is only checked by TestVerbatimText")
	}
	res := run(t, svc, services.ExecRequest{Dir: work, Env: map[string]string{"V": "v a l"}, Lines: lines, Verbatim: true})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	if diff := cmp.Diff(want, outputs(res)); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
}

// processGone reports whether pid has exited (a zombie waiting for a
// parent that does not reap it counts as gone).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] == 'Z' || data[i+2] == 'X'
}

// readPid waits for a pid file written by a test script.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(data), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid file %s", path)
		}
	}
}

// assertGone fails unless pid exits within a moment (and kills it then).
func assertGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); !processGone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running", pid)
		}
	}
}

// hangLine starts a grandchild that ignores SIGTERM, records its pid and
// waits for it.
const hangLine = `echo before; (trap '' TERM; exec sleep 1000) & echo $! > gc.pid; wait`

func TestLocalExecLineTimeout(t *testing.T) {
	dir := t.TempDir()
	svc := newExec(t, DefaultConfig(), testOptions())
	res, err := svc.LocalExec(context.Background(), services.ExecRequest{
		Dir:         dir,
		Lines:       []string{"echo first", hangLine, "echo never"},
		LineTimeout: 500 * time.Millisecond,
	})
	if !errors.Is(err, services.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		t.Errorf("a line timeout is not a context error: %v", err)
	}
	if len(res.Lines) != 2 || !res.Lines[1].TimedOut || res.Lines[0].TimedOut {
		t.Fatalf("lines = %+v", res.Lines)
	}
	if res.Stdout != "first\nbefore\n" || res.ExitCode == 0 {
		t.Errorf("partial result: exit %d, stdout %q", res.ExitCode, res.Stdout)
	}
	if d := res.Lines[1].Duration; d < 500*time.Millisecond {
		t.Errorf("line stopped after %v, before its timeout", d)
	}
	assertGone(t, readPid(t, filepath.Join(dir, "gc.pid")))
}

func TestLocalExecPhaseDeadline(t *testing.T) {
	dir := t.TempDir()
	svc := newExec(t, DefaultConfig(), testOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	res, err := svc.LocalExec(ctx, services.ExecRequest{
		Dir:         dir,
		Lines:       []string{"echo one", hangLine, "echo never"},
		LineTimeout: time.Hour,
	})
	if !errors.Is(err, services.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	if len(res.Lines) != 2 || !res.Lines[1].TimedOut || res.Stdout != "one\nbefore\n" {
		t.Fatalf("result = %+v", res)
	}
	assertGone(t, readPid(t, filepath.Join(dir, "gc.pid")))

	// A context already past its deadline runs nothing.
	res, err = svc.LocalExec(ctx, services.ExecRequest{Dir: dir, Lines: []string{"touch ran"}})
	if !errors.Is(err, services.ErrTimeout) || len(res.Lines) != 0 {
		t.Errorf("expired context: %v, %+v", err, res)
	}
}

func TestLocalExecCancel(t *testing.T) {
	dir := t.TempDir()
	svc := newExec(t, DefaultConfig(), testOptions())
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		readPid(t, filepath.Join(dir, "gc.pid"))
		cancel()
	}()
	res, err := svc.LocalExec(ctx, services.ExecRequest{Dir: dir, Lines: []string{hangLine}})
	if !errors.Is(err, context.Canceled) || errors.Is(err, services.ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
	if len(res.Lines) != 1 || res.Lines[0].TimedOut || res.Lines[0].Stdout != "before\n" {
		t.Errorf("lines = %+v", res.Lines)
	}
	assertGone(t, readPid(t, filepath.Join(dir, "gc.pid")))
}

func TestLocalExecBackgroundProcesses(t *testing.T) {
	opts := testOptions()
	opts.DrainTimeout = 5 * time.Second
	svc := newExec(t, DefaultConfig(), opts)

	// A daemon that does not hold the output pipes neither delays the line
	// nor gets killed: a setup phase may start a server for the run phase.
	dir := t.TempDir()
	start := time.Now()
	res := run(t, svc, services.ExecRequest{Dir: dir, Lines: []string{
		// Quoted, so that the shell gets 2>&1 whole (split as mlos_bench
		// splits, it would be "2 >& 1").
		"sleep 1000 >/dev/null '2>&1' & echo $! > gc.pid; echo started",
	}})
	pid := readPid(t, filepath.Join(dir, "gc.pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if took := time.Since(start); took > 4*time.Second || res.Stdout != "started\n" {
		t.Errorf("took %v, stdout %q", took, res.Stdout)
	}
	if processGone(pid) {
		t.Error("the daemon was killed")
	}

	// One that keeps stdout open delays the line by DrainTimeout at most.
	opts.DrainTimeout = 300 * time.Millisecond
	svc = newExec(t, DefaultConfig(), opts)
	dir = t.TempDir()
	done := make(chan services.ExecResult)
	go func() {
		res, _ := svc.LocalExec(context.Background(), services.ExecRequest{Dir: dir, Lines: []string{
			"sleep 1000 & echo $! > gc.pid; echo started",
		}})
		done <- res
	}()
	pid2 := readPid(t, filepath.Join(dir, "gc.pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid2, syscall.SIGKILL) })
	select {
	case res := <-done:
		if res.ExitCode != 0 || res.Stdout != "started\n" {
			t.Errorf("result %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("LocalExec hangs while a background process holds its output")
	}
}

// countWriter counts bytes and calls, safe for concurrent use.
type countWriter struct {
	mu           sync.Mutex
	bytes, calls int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += int64(len(p))
	c.calls++
	return len(p), nil
}

func TestLocalExecLargeOutputIsBounded(t *testing.T) {
	const printed = 100_000_000
	const limit = 1 << 20
	svc := newExec(t, DefaultConfig(), testOptions())
	live := &countWriter{}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run(t, svc, services.ExecRequest{
		Dir:  t.TempDir(),
		Live: live,
		// The shell gets tr \\0 x: the single quotes only keep the
		// backslashes from the split.
		Lines: []string{fmt.Sprintf(`echo start; head -c %d /dev/zero | tr '\\0' x; echo; echo end`, printed), "echo next"},
	})
	runtime.ReadMemStats(&after)
	l := res.Lines[0]
	if !l.Truncated || len(l.Stdout) > limit+100 || !strings.HasPrefix(l.Stdout, "start\nxxx") || !strings.HasSuffix(l.Stdout, "xxx\nend\n") {
		t.Errorf("line stdout: %d bytes, truncated %t, starts %q, ends %q", len(l.Stdout), l.Truncated, l.Stdout[:20], l.Stdout[len(l.Stdout)-20:])
	}
	total := len("start\n") + printed + len("\nend\n")
	allLive := int64(total + len("next\n"))
	if want := capture.Marker(int64(total - limit)); !strings.Contains(l.Stdout, want) {
		t.Errorf("the marker %q is missing", want)
	}
	if len(res.Stdout) > limit+100 || !strings.HasSuffix(res.Stdout, "end\nnext\n") {
		t.Errorf("total stdout: %d bytes", len(res.Stdout))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40<<20 {
		t.Errorf("allocated %d MiB for %d MB of output", alloc>>20, printed/1_000_000)
	}
	// Live output received everything (long lines cut into pieces, each
	// with a newline added).
	if live.bytes < allLive || live.bytes > allLive+live.calls {
		t.Errorf("live output: %d bytes in %d writes, want about %d", live.bytes, live.calls, allLive)
	}
	t.Logf("live writes: %d; allocated %d KiB", live.calls, (after.TotalAlloc-before.TotalAlloc)>>10)
}

func TestLocalExecLive(t *testing.T) {
	var mu sync.Mutex
	var got []string
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(p))
		return len(p), nil
	})
	svc := newExec(t, DefaultConfig(), testOptions())
	run(t, svc, services.ExecRequest{
		Dir:   t.TempDir(),
		Live:  w,
		Lines: []string{"echo a; sleep 0.1; echo b >&2; sleep 0.1; printf c", "echo d"},
	})
	if diff := cmp.Diff([]string{"a\n", "b\n", "c\n", "d\n"}, got); diff != "" {
		t.Errorf("live lines (-want +got):\n%s", diff)
	}

	// A failing live writer does not disturb the run.
	failing := writerFunc(func(p []byte) (int, error) { return 0, io.ErrClosedPipe })
	res := run(t, svc, services.ExecRequest{Dir: t.TempDir(), Live: failing, Lines: []string{"echo x; echo y"}})
	if res.Stdout != "x\ny\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

func TestLocalExecWorkingDirectory(t *testing.T) {
	// No Dir: a fresh temp dir, removed afterwards.
	svc := newExec(t, DefaultConfig(), testOptions())
	res := run(t, svc, services.ExecRequest{Lines: []string{"pwd", "touch f"}})
	dir := strings.TrimSpace(res.Stdout)
	if !strings.HasPrefix(dir, os.TempDir()) {
		t.Errorf("ran in %q, not under %s", dir, os.TempDir())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir %s left behind (%v)", dir, err)
	}

	// The configured temp_dir: created, used, kept.
	fixed := filepath.Join(t.TempDir(), "work", "dir")
	cfg := DefaultConfig()
	cfg.TempDir = fixed
	svc = newExec(t, cfg, testOptions())
	res = run(t, svc, services.ExecRequest{Lines: []string{"pwd", "touch f"}})
	if got := strings.TrimSpace(res.Stdout); got != fixed {
		t.Errorf("ran in %q, want %q", got, fixed)
	}
	if _, err := os.Stat(filepath.Join(fixed, "f")); err != nil {
		t.Errorf("temp_dir not kept: %v", err)
	}

	// A missing Dir is an error, not an exit code.
	_, err := svc.LocalExec(context.Background(), services.ExecRequest{Dir: filepath.Join(fixed, "missing"), Lines: []string{"true"}})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: err = %v", err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func BenchmarkLocalExecTrue(b *testing.B) {
	svc := newExec(b, DefaultConfig(), Options{Logger: discardLogger()})
	req := services.ExecRequest{Dir: b.TempDir(), Lines: []string{"true"}}
	for b.Loop() {
		res, err := svc.LocalExec(context.Background(), req)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res.ExitCode)
		}
	}
}

// BenchmarkLaunchVsShellLoop puts the cost of one LocalExec line
// (`echo score=$value`: fork/exec of /bin/sh from Go, two output pipes,
// process group, wait) beside a shell loop making the same launches
// (`/bin/sh -c "echo score=$i" >> file`), measured in the same run. The
// "ratio" metric is LocalExec's time per launch over the loop's: the
// floor of bench's framework overhead benchmark
// (scripts/bench-overhead.sh) before any storage or bookkeeping.
func BenchmarkLaunchVsShellLoop(b *testing.B) {
	svc := newExec(b, DefaultConfig(), Options{Logger: discardLogger()})
	dir := b.TempDir()
	req := services.ExecRequest{Dir: dir, Lines: []string{"echo score=$value"}, Env: map[string]string{"value": "1"}}
	const n = 200
	loop := fmt.Sprintf(`for i in $(seq %d); do /bin/sh -c "echo score=$i" >> %s/loop.txt; done`, n, dir)
	var execTime, loopTime time.Duration
	for b.Loop() {
		start := time.Now()
		for range n {
			res, err := svc.LocalExec(context.Background(), req)
			if err != nil || res.ExitCode != 0 {
				b.Fatal(err, res.ExitCode)
			}
		}
		execTime += time.Since(start)
		start = time.Now()
		if out, err := exec.Command("/bin/sh", "-c", loop).CombinedOutput(); err != nil {
			b.Fatal(err, string(out))
		}
		loopTime += time.Since(start)
	}
	b.ReportMetric(float64(execTime.Microseconds())/float64(b.N*n), "us/localexec")
	b.ReportMetric(float64(loopTime.Microseconds())/float64(b.N*n), "us/shell-launch")
	b.ReportMetric(float64(execTime)/float64(loopTime), "ratio")
}

// Every process a line starts carries its owner's mark, even when the
// config sets a variable of that name, so that a later bench can find and
// kill what a killed bench left running (internal/reaper).
func TestLocalExecMarksProcessesWithTheirOwner(t *testing.T) {
	me, err := reaper.Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	svc := newExec(t, DefaultConfig(), testOptions())
	res := run(t, svc, services.ExecRequest{Dir: t.TempDir(), Env: map[string]string{reaper.EnvVar: "forged"},
		// The double quotes keep the single quotes for the shell (as
		// mlos_bench splits lines): the grandchild sh expands the name.
		Lines: []string{`sh -c "'echo $` + reaper.EnvVar + `'"`}})
	if got := strings.TrimSpace(res.Stdout); got != me.String() {
		t.Errorf("a grandchild sees %s=%q, want %q", reaper.EnvVar, got, me.String())
	}
}
