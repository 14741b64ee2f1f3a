package services

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cgroup is a cgroup v2 group that a trial runner's local commands start
// in (clone3 CLONE_INTO_CGROUP: no child escapes before it is moved). Its
// cpu.stat counts the CPU of every process in it, daemons that
// double-forked away from their shell included; its memory.peak (when the
// memory controller is enabled for it) is the peak memory of them all.
//
// One group serves a runner for the whole experiment, so that daemons a
// trial's setup starts (a database server) stay accounted in the trials
// that use them; a trial's figures are the differences of cpu.stat across
// the trial, and memory.peak is reset at each trial's start where the
// kernel allows it.
type Cgroup struct {
	dir string
	fd  int
}

// CgroupStats are a group's counters.
type CgroupStats struct {
	UserS, SysS float64
	// PeakBytes is memory.peak (-1: unknown, the memory controller is not
	// enabled for the group).
	PeakBytes int64
}

// cgroup2Dir returns the cgroup v2 folder of this process: the cgroup2
// mount plus the path /proc/self/cgroup gives for hierarchy 0.
func cgroup2Dir() (string, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	mount := ""
	for _, l := range strings.Split(string(mounts), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		f := strings.Fields(pre)
		if len(f) >= 5 && f[3] == "/" {
			mount = f[4]
			break
		}
	}
	if mount == "" {
		return "", errors.New("no cgroup v2 file system is mounted")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel := ""
	sc := bufio.NewScanner(strings.NewReader(string(self)))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		return "", errors.New("this process has no cgroup v2 path")
	}
	return filepath.Join(mount, filepath.Clean("/"+rel)), nil
}

// CgroupAvailable reports why per-runner cgroups cannot be used here (nil:
// they can).
func CgroupAvailable() error {
	c, err := NewCgroup("probe")
	if err != nil {
		return err
	}
	return c.Close()
}

// NewCgroup creates a group for this process's runner name under this
// process's own cgroup, and enables the memory controller for it where
// the parent allows.
func NewCgroup(name string) (*Cgroup, error) {
	parent, err := cgroup2Dir()
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	// memory.peak needs the memory controller enabled for the children;
	// best effort (a parent with processes of its own may refuse).
	if ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.controllers")); err == nil && strings.Contains(" "+string(ctl)+" ", " memory") {
		_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory"), 0)
	}
	dir := filepath.Join(parent, fmt.Sprintf("bench-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup v2: cannot create a group in %s: %w", parent, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu.stat")); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup v2: %s has no cpu.stat", dir)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	return &Cgroup{dir: dir, fd: fd}, nil
}

// Dir is the group's folder.
func (c *Cgroup) Dir() string { return c.dir }

// FD is the open folder, for SysProcAttr.CgroupFD.
func (c *Cgroup) FD() int { return c.fd }

// Stats reads cpu.stat and memory.peak.
func (c *Cgroup) Stats() (CgroupStats, error) {
	st := CgroupStats{PeakBytes: -1}
	b, err := os.ReadFile(filepath.Join(c.dir, "cpu.stat"))
	if err != nil {
		return st, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, " ")
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		switch k {
		case "user_usec":
			st.UserS = n / 1e6
		case "system_usec":
			st.SysS = n / 1e6
		}
	}
	if b, err := os.ReadFile(filepath.Join(c.dir, "memory.peak")); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			st.PeakBytes = n
		}
	}
	return st, nil
}

// ResetPeak resets memory.peak (kernels from 6.12 take a write); false
// when it could not be reset.
func (c *Cgroup) ResetPeak() bool {
	return os.WriteFile(filepath.Join(c.dir, "memory.peak"), []byte("reset\n"), 0) == nil
}

// Kill kills every process in the group (cgroup.kill, or SIGKILL to each
// process listed in cgroup.procs on kernels before 5.14).
func (c *Cgroup) Kill() {
	if os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0) == nil {
		return
	}
	b, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Close kills what is left in the group and removes it.
func (c *Cgroup) Close() error {
	if c == nil {
		return nil
	}
	c.Kill()
	_ = syscall.Close(c.fd)
	var err error
	for range 50 {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("cgroup v2: removing %s: %w", c.dir, err)
}

type cgroupKey struct{}

// WithCgroup returns a context whose local commands start in cg.
func WithCgroup(ctx context.Context, cg *Cgroup) context.Context {
	return context.WithValue(ctx, cgroupKey{}, cg)
}

// CgroupFrom returns the group of ctx, or nil.
func CgroupFrom(ctx context.Context) *Cgroup {
	cg, _ := ctx.Value(cgroupKey{}).(*Cgroup)
	return cg
}
