package storage

import "testing"

func TestPlannedNote(t *testing.T) {
	for _, c := range []struct {
		notes []string
		want  int
	}{
		{nil, 0},
		{[]string{"end reason: budget"}, 0},
		{[]string{PlannedPrefix + "60 trials"}, 60},
		{[]string{PlannedPrefix + "60 trials", "end reason: x", PlannedPrefix + "80 trials"}, 80},
		{[]string{PlannedPrefix + "many trials"}, 0},
	} {
		if got := Planned(c.notes); got != c.want {
			t.Errorf("Planned(%q) = %d, want %d", c.notes, got, c.want)
		}
	}
}
