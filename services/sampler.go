package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/benchtune/bench/trial"
)

// Periodic telemetry metric names (see docs/measurements.md).
const (
	// MetricCPUSeconds is the summed user+system CPU time, in seconds, of
	// the processes alive at the sample in the registered process groups.
	MetricCPUSeconds = "bench.cpu_s"
	// MetricRSSMiB is their summed resident set size, in MiB.
	MetricRSSMiB = "bench.rss_mb"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat
// (sysconf(_SC_CLK_TCK)): 100 on every Linux architecture bench runs on.
const clockTicks = 100

// Sampler samples, every interval, the CPU time and resident memory of the
// process groups registered with it (a trial's running script lines) into
// telemetry rows (MetricCPUSeconds, MetricRSSMiB). It samples only while
// at least one group is registered. The processes of a group are found by
// scanning /proc for that process group id; a process that has exited is
// no longer counted, so the CPU seconds are those of the processes alive
// at each sample and may drop when one exits.
//
// A Sampler is safe for concurrent use. The methods of a nil *Sampler do
// nothing (Samples returns nil), so services call them without checking
// whether the context holds one. Off Linux (no /proc) it records nothing.
type Sampler struct {
	interval time.Duration
	procDir  string

	mu      sync.Mutex
	groups  map[int]int // pgid -> registration count
	samples []trial.Telemetry
	closed  bool
	wake    chan struct{} // buffered 1: a group was registered
	stop    chan struct{}
	done    chan struct{}
}

// NewSampler returns a Sampler that samples every interval (at least 10ms)
// and starts its goroutine; Close stops it.
func NewSampler(interval time.Duration) *Sampler {
	if interval < 10*time.Millisecond {
		interval = 10 * time.Millisecond
	}
	s := &Sampler{
		interval: interval,
		procDir:  "/proc",
		groups:   map[int]int{},
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go s.loop()
	return s
}

// Interval returns the sampling interval.
func (s *Sampler) Interval() time.Duration {
	if s == nil {
		return 0
	}
	return s.interval
}

// Register adds the process group pgid to the sampled groups. Registering
// a group twice needs two Unregisters. After Close it does nothing.
func (s *Sampler) Register(pgid int) {
	if s == nil || pgid <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.groups[pgid]++
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Unregister removes one registration of pgid.
func (s *Sampler) Unregister(pgid int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.groups[pgid]; n > 1 {
		s.groups[pgid] = n - 1
	} else {
		delete(s.groups, pgid)
	}
}

// Groups returns how many process groups are registered.
func (s *Sampler) Groups() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.groups)
}

// Samples returns a copy of the rows recorded so far, in time order.
func (s *Sampler) Samples() []trial.Telemetry {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return nil
	}
	return append([]trial.Telemetry(nil), s.samples...)
}

// Close stops the sampling goroutine and waits for it; later
// registrations are ignored. Closing twice is fine.
func (s *Sampler) Close() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		clear(s.groups)
		close(s.stop)
	}
	s.mu.Unlock()
	<-s.done
}

func (s *Sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		// Idle until a group is registered.
		for s.Groups() == 0 {
			select {
			case <-s.stop:
				return
			case <-s.wake:
			}
		}
		t.Reset(s.interval)
		for s.Groups() > 0 {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}
}

// sample takes one sample of the registered groups.
func (s *Sampler) sample() {
	s.mu.Lock()
	groups := make(map[int]bool, len(s.groups))
	for g := range s.groups {
		groups[g] = true
	}
	s.mu.Unlock()
	if len(groups) == 0 {
		return
	}
	cpu, rss, ok := scanGroups(s.procDir, groups)
	if !ok {
		return
	}
	now := time.Now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A group unregistered while the scan ran: once the last group is
	// gone, nothing more is recorded.
	if s.closed || len(s.groups) == 0 {
		return
	}
	s.samples = append(s.samples,
		trial.Telemetry{Ts: now, Metric: MetricCPUSeconds, Value: cpu},
		trial.Telemetry{Ts: now, Metric: MetricRSSMiB, Value: rss})
}

// scanGroups sums CPU seconds and RSS MiB over the processes in procDir
// whose process group is in groups. ok is false when procDir cannot be
// read.
func scanGroups(procDir string, groups map[int]bool) (cpuS, rssMiB float64, ok bool) {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return 0, 0, false
	}
	page := float64(os.Getpagesize())
	var ticks, pages uint64
	for _, e := range entries {
		name := e.Name()
		if name == "" || name[0] < '0' || name[0] > '9' {
			continue
		}
		data, err := os.ReadFile(procDir + "/" + name + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		st, err := ParseProcStat(data)
		if err != nil || !groups[st.Pgrp] {
			continue
		}
		ticks += st.UTime + st.STime
		if st.RSS > 0 {
			pages += uint64(st.RSS)
		}
	}
	return float64(ticks) / clockTicks, float64(pages) * page / (1 << 20), true
}

// ProcStat is what the sampler reads of a /proc/<pid>/stat line.
type ProcStat struct {
	PID   int
	Comm  string
	State byte
	Pgrp  int
	UTime uint64 // clock ticks
	STime uint64 // clock ticks
	RSS   int64  // pages
}

// ParseProcStat parses a /proc/<pid>/stat line (proc(5)). The command name
// in parentheses may hold spaces and parentheses, so the fields after it
// are split after the last ')'.
func ParseProcStat(data []byte) (ProcStat, error) {
	var st ProcStat
	open := bytes.IndexByte(data, '(')
	closing := bytes.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return st, errors.New("proc stat: no (comm)")
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil {
		return st, fmt.Errorf("proc stat: pid: %w", err)
	}
	st.PID = pid
	st.Comm = string(data[open+1 : closing])
	// Fields from 3 (state) on.
	f := bytes.Fields(data[closing+1:])
	// state=3 ... pgrp=5, utime=14, stime=15, rss=24 → index field-3.
	if len(f) < 24-2 {
		return st, fmt.Errorf("proc stat: %d fields after comm, want at least %d", len(f), 24-2)
	}
	if len(f[0]) > 0 {
		st.State = f[0][0]
	}
	if st.Pgrp, err = strconv.Atoi(string(f[5-3])); err != nil {
		return st, fmt.Errorf("proc stat: pgrp: %w", err)
	}
	if st.UTime, err = strconv.ParseUint(string(f[14-3]), 10, 64); err != nil {
		return st, fmt.Errorf("proc stat: utime: %w", err)
	}
	if st.STime, err = strconv.ParseUint(string(f[15-3]), 10, 64); err != nil {
		return st, fmt.Errorf("proc stat: stime: %w", err)
	}
	if st.RSS, err = strconv.ParseInt(string(f[24-3]), 10, 64); err != nil {
		return st, fmt.Errorf("proc stat: rss: %w", err)
	}
	return st, nil
}

type samplerKey struct{}

// WithSampler returns a context whose local commands register their
// process groups with s.
func WithSampler(ctx context.Context, s *Sampler) context.Context {
	return context.WithValue(ctx, samplerKey{}, s)
}

// SamplerFrom returns the Sampler of ctx, or nil.
func SamplerFrom(ctx context.Context) *Sampler {
	s, _ := ctx.Value(samplerKey{}).(*Sampler)
	return s
}
