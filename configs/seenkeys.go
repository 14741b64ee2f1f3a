package configs

import (
	"regexp"
	"sync"

	"github.com/benchtune/bench/configs/json5"
)

// seenKeys records the object keys and the "$name" references of every
// config document a Loader (and the loaders made from it) read: the keys
// a global can reach (mlos_bench's rule: a global overrides only a key a
// config has) or that a template reads. bench run warns about a
// command-line global that none of them is (a mistyped option).
type seenKeys struct {
	mu sync.Mutex
	m  map[string]bool
}

var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

func (s *seenKeys) add(n *json5.Node) {
	if s == nil || n == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	var walk func(n *json5.Node)
	walk = func(n *json5.Node) {
		switch n.Kind {
		case json5.Object:
			for _, m := range n.Members {
				s.m[m.Key] = true
				walk(m.Value)
			}
		case json5.Array:
			for _, e := range n.Elems {
				walk(e)
			}
		case json5.String:
			for _, m := range varRef.FindAllStringSubmatch(n.Str, -1) {
				s.m[m[1]] = true
			}
		}
	}
	walk(n)
}

// SeenKeys returns the object keys and "$name" references of every config
// document this loader, and the loaders made from it, have read.
func (l *Loader) SeenKeys() map[string]bool {
	out := map[string]bool{}
	if l.seen == nil {
		return out
	}
	l.seen.mu.Lock()
	defer l.seen.mu.Unlock()
	for k := range l.seen.m {
		out[k] = true
	}
	return out
}

// OptionKeys are the globals the launcher's own options set or stand for
// (their names with '_', e.g. "num_trial_runners", "fail_fast").
func OptionKeys() []string {
	var out []string
	for _, o := range Options {
		for _, k := range []string{o.dest, o.global} {
			if k != "" {
				out = append(out, k)
			}
		}
	}
	return out
}
