package ssh

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/shellenv"
	"log/slog"
	"strings"
	"time"

	"github.com/benchtune/bench/services"
)

// osTuning holds the timings of Shutdown and Reboot; tests shorten them
// and replace the commands.
type osTuning struct {
	commands    func(op string, force bool) []string
	cmdTimeout  time.Duration // bound of the shutdown/reboot command itself
	poll        time.Duration // interval between reachability probes
	downTimeout time.Duration // how long a host may take to go down
	upTimeout   time.Duration // how long a rebooting host may take to come back
}

func defaultOSTuning() osTuning {
	return osTuning{
		commands:    osCommands,
		cmdTimeout:  time.Minute,
		poll:        2 * time.Second,
		downTimeout: 5 * time.Minute,
		upTimeout:   10 * time.Minute,
	}
}

// osCommands lists the commands tried in turn, as mlos_bench does.
func osCommands(op string, force bool) []string {
	switch {
	case op == "shutdown" && force:
		return []string{"systemctl poweroff --force", "poweroff -f", "shutdown -h now", "poweroff", "halt -p"}
	case op == "shutdown":
		return []string{"shutdown -h now", "systemctl poweroff", "poweroff", "halt -p"}
	case force:
		return []string{"systemctl reboot --force", "reboot -f", "shutdown -r now", "reboot"}
	default:
		return []string{"shutdown -r now", "systemctl reboot", "reboot"}
	}
}

// Shutdown powers the host off: it runs the first of the usual commands
// that works (through `sudo -n` when not logged in as root), takes the
// connection dropping as success, and waits until the host no longer
// answers SSH.
func (s *HostService) Shutdown(ctx context.Context, params services.Params, force bool) error {
	t, err := s.cfg.resolveTarget(params)
	if err != nil {
		return fmt.Errorf("SshHostService shutdown: %w", err)
	}
	if _, err := s.osCommand(ctx, t, "shutdown", force); err != nil {
		return err
	}
	if err := s.waitDown(ctx, t); err != nil {
		return fmt.Errorf("shutdown of %s: %w", t.addr(), err)
	}
	slog.Info("ssh: host is down", "host", t.addr())
	return nil
}

// Reboot restarts the host like Shutdown does, then waits until it answers
// SSH again after having gone away (or with a new Linux boot id).
func (s *HostService) Reboot(ctx context.Context, params services.Params, force bool) error {
	t, err := s.cfg.resolveTarget(params)
	if err != nil {
		return fmt.Errorf("SshHostService reboot: %w", err)
	}
	bootID, err := s.osCommand(ctx, t, "reboot", force)
	if err != nil {
		return err
	}
	if err := s.waitBack(ctx, t, bootID); err != nil {
		return fmt.Errorf("reboot of %s: %w", t.addr(), err)
	}
	slog.Info("ssh: host is back after a reboot", "host", t.addr())
	return nil
}

const bootIDCmd = "cat /proc/sys/kernel/random/boot_id 2>/dev/null; exit 0"

// osCommand runs the shutdown or reboot commands and returns the boot id
// read before (empty where the host has none).
func (s *HostService) osCommand(ctx context.Context, t target, op string, force bool) (string, error) {
	c, err := s.pool.get(ctx, t)
	if err != nil {
		return "", fmt.Errorf("%s of %s: %w", op, t.addr(), err)
	}
	defer s.pool.drop(c)
	var bootID string
	if res, err := c.run(ctx, bootIDCmd, nil); err == nil {
		bootID = strings.TrimSpace(res.stdout)
	}
	var quoted []string
	for _, cmd := range s.os.commands(op, force) {
		quoted = append(quoted, shellenv.Quote(cmd))
	}
	script := strings.Join([]string{
		`sudo=`,
		`if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo='sudo -n'; fi`,
		`for cmd in ` + strings.Join(quoted, " ") + `; do`,
		`  $sudo /bin/sh -c "$cmd" </dev/null && exit 0`,
		`done`,
		`echo "bench: none of the commands worked; this needs root or passwordless sudo" >&2`,
		`exit 1`,
	}, "\n")
	slog.Info("ssh: "+op+" requested", "host", t.addr(), "force", force)
	cctx, cancel := context.WithTimeout(ctx, s.os.cmdTimeout)
	defer cancel()
	res, err := c.run(cctx, script, nil)
	switch {
	case err == nil && res.exitCode == 0:
		return bootID, nil
	case err == nil:
		return "", fmt.Errorf("%s of %s failed (exit code %d): %s", op, t.addr(), res.exitCode, lastLines(res.stderr, 10))
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s of %s: %w", op, t.addr(), context.Cause(ctx))
	}
	// The connection went away (or the command hung) while the host went
	// down: what was asked for is happening.
	slog.Debug("ssh: connection ended during "+op, "host", t.addr(), "err", err)
	return bootID, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// probe makes a fresh connection (not the cached one) and reads the boot
// id. up is false when the host cannot be reached or logged in to; an
// untrusted host key is an error.
func (s *HostService) probe(ctx context.Context, t target) (bootID string, up bool, err error) {
	c, err := s.pool.dial(ctx, t)
	if err != nil {
		var hk *HostKeyError
		if errors.As(err, &hk) {
			return "", false, err
		}
		return "", false, nil
	}
	defer c.close()
	res, err := c.run(ctx, bootIDCmd, nil)
	if err != nil {
		return "", false, nil
	}
	return strings.TrimSpace(res.stdout), true, nil
}

func (s *HostService) waitDown(ctx context.Context, t target) error {
	deadline := time.Now().Add(s.os.downTimeout)
	for {
		_, up, err := s.probe(ctx, t)
		if err != nil {
			return err
		}
		if !up {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the host still answers SSH %s later: %w", s.os.downTimeout, services.ErrTimeout)
		}
		if err := sleepCtx(ctx, s.os.poll); err != nil {
			return err
		}
	}
}

func (s *HostService) waitBack(ctx context.Context, t target, bootID string) error {
	deadline := time.Now().Add(s.os.downTimeout + s.os.upTimeout)
	wentDown := false
	for {
		id, up, err := s.probe(ctx, t)
		if err != nil {
			return err
		}
		switch {
		case up && (wentDown || (bootID != "" && id != "" && id != bootID)):
			return nil
		case !up:
			wentDown = true
		}
		if time.Now().After(deadline) {
			if wentDown {
				return fmt.Errorf("the host did not come back within %s: %w", s.os.downTimeout+s.os.upTimeout, services.ErrTimeout)
			}
			return fmt.Errorf("the host did not go down within %s: %w", s.os.downTimeout+s.os.upTimeout, services.ErrTimeout)
		}
		if err := sleepCtx(ctx, s.os.poll); err != nil {
			return err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
