package launcher

import (
	"path/filepath"
	"testing"
)

// TestReapMessage: what bench says it cleaned up names whose leftovers
// they were (the dead bench processes by id, the environments whose trial
// folders were removed), not "they".
func TestReapMessage(t *testing.T) {
	dir := func(name, mark string) string { return filepath.Join("/tmp", "bench-"+name+"-"+mark+"-123456") }
	for _, tc := range []struct {
		name   string
		killed int
		owners []string
		dirs   []string
		want   string
	}{
		{"nothing", 0, nil, nil, ""},
		{"folders of one dead bench", 0, nil,
			[]string{dir("shipit", "o0123abcd.4242.99"), dir("shipit", "o0123abcd.4242.99")},
			`removed 2 temp folders left by bench process 4242, which died (made for "shipit")`},
		{"processes and folders of two", 3, []string{"o0123abcd.4242.99", "o0123abcd.4250.7"},
			[]string{dir("db-load", "o0123abcd.4242.99"), dir("my-env", "o0123abcd.4250.7")},
			`killed 3 processes left running by bench processes 4242 and 4250, which died; removed 2 temp folders left by bench processes 4242 and 4250, which died (made for "db-load", "my-env")`},
		{"many", 7, []string{"o0123abcd.1.1", "o0123abcd.2.1", "o0123abcd.3.1", "o0123abcd.4.1", "o0123abcd.5.1", "o0123abcd.6.1", "o0123abcd.7.1"}, nil,
			`killed 7 processes left running by bench processes 1, 2, 3, 4, 5 and 2 others, which died`},
		{"unreadable names", 1, []string{"junk"}, []string{"/tmp/other"},
			`killed 1 process left running by bench processes that died; removed 1 temp folder left by bench processes that died`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reapMessage(tc.killed, tc.owners, tc.dirs); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
