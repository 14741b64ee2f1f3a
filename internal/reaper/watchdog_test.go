package reaper

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The watchdog waits in a shell while its bench runs: told Keep or Done it
// ends with the pipe, running nothing; otherwise (bench died) it execs the
// bench binary as `bench __reaper-watchdog MARK`, even when the binary's
// path is gone by then (go run removes its binary).
func TestWatchdogExecsBenchOnlyWhenNeeded(t *testing.T) {
	me, err := Self()
	if err != nil {
		t.Skip("no /proc:", err)
	}
	for _, tc := range []struct {
		name   string
		say    func(*Watchdog)
		remove bool
		execs  bool
	}{
		{"killed", func(*Watchdog) {}, false, true},
		{"killed, binary removed", func(*Watchdog) {}, true, true},
		{"done", (*Watchdog).Done, false, false},
		{"keep", (*Watchdog).Keep, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "ran")
			exe := filepath.Join(dir, "fake-bench")
			// The fake bench records its arguments, and whether it carries
			// an owner mark (it must not).
			script := "#!/bin/sh\nprintf '%s %s %s' \"$1\" \"$2\" \"${" + EnvVar + ":-unmarked}\" > " + record + "\n"
			if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv(EnvVar, me.String())
			d, err := StartWatchdog(exe)
			if err != nil {
				t.Fatal(err)
			}
			if tc.remove {
				if err := os.Remove(exe); err != nil {
					t.Fatal(err)
				}
			}
			tc.say(d)
			d.w.Close() // as the kernel does when bench exits
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, _, _, err := stat(d.PID())
				if err != nil || st == 'Z' || st == 'X' {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the watchdog did not end")
				}
				time.Sleep(5 * time.Millisecond)
			}
			got, err := os.ReadFile(record)
			if !tc.execs {
				if err == nil {
					t.Errorf("ran bench (%q) after %s", got, tc.name)
				}
				return
			}
			if want := WatchdogArg + " " + me.String() + " unmarked"; strings.TrimSpace(string(got)) != want {
				t.Errorf("ran %q (%v), want %q", got, err, want)
			}
		})
	}
}
