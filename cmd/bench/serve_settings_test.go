package main

import (
	"testing"
	"time"

	"github.com/benchtune/bench/configs"
)

// bench serve, bench run --serve and bench worker --connect read
// trial_lease by the config converters' rule, as the scheduler config
// reads the same global: a number (or a string of one) is seconds, else a
// duration string. Before, serve read it with time.ParseDuration alone, so
// --trial_lease 30 was refused by serve ("missing unit") and taken by the
// scheduler.
func TestServeSettingsTrialLeaseFollowsTheConverters(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want time.Duration
	}{
		{"30", 30 * time.Second},
		{" 1.5 ", 1500 * time.Millisecond},
		{int64(30), 30 * time.Second},
		{2.5, 2500 * time.Millisecond},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{nil, 0},
		{"", 0},
	} {
		c, err := serveSettings(&configs.Launch{Globals: map[string]any{"trial_lease": tc.v}})
		if err != nil || c.lease != tc.want {
			t.Errorf("trial_lease %#v: lease %s, err %v; want %s", tc.v, c.lease, err, tc.want)
		}
	}
	for _, bad := range []any{"soon", "-3", true} {
		if _, err := serveSettings(&configs.Launch{Globals: map[string]any{"trial_lease": bad}}); err == nil {
			t.Errorf("trial_lease %#v: no error", bad)
		}
	}
}
