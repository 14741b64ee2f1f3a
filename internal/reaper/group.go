package reaper

import (
	"os"
	"strconv"
)

// GroupLive reports whether process group pgid has a member that has not
// ended. kill(-pgid, 0) counts zombies too: processes that ended but that
// their parent has not reaped yet. A trial's shell that is killed leaves
// its children orphaned, so init reaps them, and where init reaps late (a
// container's init, or bench itself as pid 1, which never reaps children
// it did not start) a stopped trial's group looked alive until the kill
// grace period ran out. Without /proc it cannot tell and reports true.
func GroupLive(pgid int) bool {
	d, err := os.Open(procDir)
	if err != nil {
		return true
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return true
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		state, pgrp, _, err := stat(pid)
		if err != nil || pgrp != pgid {
			continue // gone meanwhile, or another group
		}
		if state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}
