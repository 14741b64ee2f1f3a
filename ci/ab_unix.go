//go:build unix

package ci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// measure runs command once with sh -c and returns its measurements.
func measure(ctx context.Context, command, dir string, timeout time.Duration) (map[string]float64, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &limitWriter{w: &stderr, n: 4096}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", timeout)
		}
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	m := map[string]float64{"wall_s": wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m["cpu_user_s"] = time.Duration(ru.Utime.Nano()).Seconds()
		m["cpu_sys_s"] = time.Duration(ru.Stime.Nano()).Seconds()
		m["max_rss_mb"] = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	return m, nil
}
