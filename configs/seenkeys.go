package configs

import (
	"regexp"
	"sync"

	"github.com/benchtune/bench/configs/json5"
)

// seenKeys records the object keys, the "$name" references and the names
// in required_args and shell_env_params lists of every config document a
// Loader (and the loaders made from it) read: the keys a global can reach
// (mlos_bench's rule: a global overrides only a key a config has) or that
// a template or an environment reads. bench run warns about a global that
// none of them is (a mistyped option or globals-file key).
type seenKeys struct {
	mu sync.Mutex
	m  map[string]bool
	// in holds, per object key, the documents (roots) that have it; a
	// "$name" reference or a listed name is recorded under the nil root
	// (read, wherever it is written).
	in map[string]map[*json5.Node]bool
}

// namesArgs are the config keys whose list of strings names parameters
// that an environment takes from the globals.
var namesArgs = map[string]bool{"required_args": true, "shell_env_params": true}

var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

func (s *seenKeys) add(n *json5.Node) {
	if s == nil || n == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
		s.in = map[string]map[*json5.Node]bool{}
	}
	root := n
	mark := func(key string, doc *json5.Node) {
		s.m[key] = true
		if s.in[key] == nil {
			s.in[key] = map[*json5.Node]bool{}
		}
		s.in[key][doc] = true
	}
	var walk func(n *json5.Node)
	walk = func(n *json5.Node) {
		switch n.Kind {
		case json5.Object:
			for _, m := range n.Members {
				mark(m.Key, root)
				if namesArgs[m.Key] && m.Value != nil && m.Value.Kind == json5.Array {
					// Names an environment reads from the globals.
					for _, e := range m.Value.Elems {
						if e != nil && e.Kind == json5.String {
							mark(e.Str, nil)
						}
					}
				}
				walk(m.Value)
			}
		case json5.Array:
			for _, e := range n.Elems {
				walk(e)
			}
		case json5.String:
			for _, m := range varRef.FindAllStringSubmatch(n.Str, -1) {
				mark(m[1], nil)
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

// SeenKeysOutside is SeenKeys without the object keys that only the
// documents with the given roots have (their "$name" references count):
// the keys that something other than those documents has or reads.
func (l *Loader) SeenKeysOutside(roots ...*json5.Node) map[string]bool {
	out := map[string]bool{}
	if l.seen == nil {
		return out
	}
	skip := map[*json5.Node]bool{}
	for _, r := range roots {
		if r != nil {
			skip[r] = true
		}
	}
	l.seen.mu.Lock()
	defer l.seen.mu.Unlock()
	for k, docs := range l.seen.in {
		for d := range docs {
			if !skip[d] {
				out[k] = true
				break
			}
		}
	}
	return out
}

// ShownPath is how bench names a config file in messages: relative to
// the working folder when it is below it.
func ShownPath(p string) string { return shownPath(p) }

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
