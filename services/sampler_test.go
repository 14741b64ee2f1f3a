package services

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchtune/bench/trial"
)

func TestParseProcStatCommWithSpacesAndParens(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime priority nice threads
	// itrealvalue starttime vsize rss ...
	line := "4242 (my (odd) cmd) x) S 1 777 777 0 -1 4194560 10 0 0 0 150 25 0 0 20 0 1 0 123 1000000 2560 18446744073709551615\n"
	st, err := ParseProcStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := ProcStat{PID: 4242, Comm: "my (odd) cmd) x", State: 'S', Pgrp: 777, UTime: 150, STime: 25, RSS: 2560}
	if st != want {
		t.Errorf("got %+v, want %+v", st, want)
	}
	for _, bad := range []string{"", "12 no parens", "12 (x) S 1 2", "x (y) S 1 2 3 0 -1 0 0 0 0 0 1 1 0 0 0 0 1 0 1 1 1"} {
		if _, err := ParseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseProcStatSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	data, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseProcStat(data)
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.Pgrp != syscall.Getpgrp() || st.RSS <= 0 {
		t.Errorf("got %+v for pid %d pgrp %d", st, os.Getpid(), syscall.Getpgrp())
	}
}

func TestSamplerNil(t *testing.T) {
	var s *Sampler
	s.Register(1)
	s.Unregister(1)
	s.Close()
	if s.Samples() != nil || s.Groups() != 0 || s.Interval() != 0 {
		t.Error("a nil Sampler should do nothing")
	}
	if SamplerFrom(context.Background()) != nil {
		t.Error("empty context has a Sampler")
	}
	s2 := NewSampler(time.Second)
	defer s2.Close()
	if SamplerFrom(WithSampler(context.Background(), s2)) != s2 {
		t.Error("SamplerFrom does not return the sampler")
	}
}

func TestSamplerCloseStopsAndIgnoresRegistrations(t *testing.T) {
	s := NewSampler(10 * time.Millisecond)
	s.Register(syscall.Getpgrp())
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	select {
	case <-s.done:
	default:
		t.Fatal("the goroutine still runs after Close")
	}
	s.Register(syscall.Getpgrp())
	if s.Groups() != 0 {
		t.Error("a registration after Close counted")
	}
	n := len(s.Samples())
	time.Sleep(50 * time.Millisecond)
	if len(s.Samples()) != n {
		t.Error("samples recorded after Close")
	}
	s.Close() // twice is fine
}

func TestSamplerIdleWithoutGroups(t *testing.T) {
	s := NewSampler(10 * time.Millisecond)
	defer s.Close()
	time.Sleep(60 * time.Millisecond)
	if got := s.Samples(); got != nil {
		t.Errorf("samples with no group registered: %v", got)
	}
}

// startGroup starts a python3 program in its own process group.
func startGroup(t *testing.T, prog string) *exec.Cmd {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("no /proc")
	}
	// The interpreter itself, not a wrapper (a pyenv shim) whose helper
	// processes would come and go in the group.
	exe, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command(strings.TrimSpace(string(exe)), "-c", prog)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	return cmd
}

func metric(rows []trial.Telemetry, name string) []float64 {
	var v []float64
	for _, r := range rows {
		if r.Metric == name {
			f, _ := r.Value.(float64)
			v = append(v, f)
		}
	}
	return v
}

func TestSamplerBusyLoopCPU(t *testing.T) {
	cmd := startGroup(t, "import time\nt=time.time()\nwhile time.time()-t<1.2: pass\n")
	s := NewSampler(100 * time.Millisecond)
	defer s.Close()
	s.Register(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s.Unregister(cmd.Process.Pid)
	rows := s.Samples()
	cpu := metric(rows, MetricCPUSeconds)
	if len(cpu) < 3 {
		t.Fatalf("%d %s samples, want >= 3: %v", len(cpu), MetricCPUSeconds, rows)
	}
	// Samples taken after the process exited (but before Unregister) read
	// 0: keep those out of the order check.
	last := 0.0
	for i, v := range cpu {
		if v == 0 && i > 0 {
			break
		}
		if v < last {
			t.Errorf("cpu went down while the process lived: %v", cpu)
		}
		last = v
	}
	if last < 0.3 {
		t.Errorf("last cpu sample %.2fs of a 1.2s busy loop, want >= 0.3: %v", last, cpu)
	}
	if len(metric(rows, MetricRSSMiB)) != len(cpu) {
		t.Errorf("rss and cpu rows differ: %v", rows)
	}
	for _, r := range rows {
		if r.Ts.Location() != time.UTC || r.Ts.IsZero() {
			t.Errorf("row time %v is not UTC", r.Ts)
		}
	}
	if s.Groups() != 0 {
		t.Error("group still registered")
	}
}

func TestSamplerRSS(t *testing.T) {
	cmd := startGroup(t, "import time\nb=bytearray(100<<20)\nfor i in range(0,len(b),4096): b[i]=1\ntime.sleep(0.8)\n")
	s := NewSampler(100 * time.Millisecond)
	defer s.Close()
	s.Register(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s.Unregister(cmd.Process.Pid)
	rss := metric(s.Samples(), MetricRSSMiB)
	peak := 0.0
	for _, v := range rss {
		peak = max(peak, v)
	}
	if peak < 90 {
		t.Errorf("peak rss %.1f MiB of a process touching 100 MiB, want >= 90: %v", peak, rss)
	}
}
