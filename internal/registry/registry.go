// Package registry maps class names to constructors (one registry per
// kind: environments, services, optimizers). Classes register once, from
// their package's init function.
package registry

import (
	"sort"
	"sync"
)

// Registry holds the constructors of one kind of class.
type Registry[T any] struct {
	kind string
	mu   sync.RWMutex
	m    map[string]T
}

// New returns an empty registry; kind names it in panics.
func New[T any](kind string) *Registry[T] { return &Registry[T]{kind: kind, m: map[string]T{}} }

// Register makes v available under each name. A name registered twice
// panics: that is a programming error.
func (r *Registry[T]) Register(v T, names ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range names {
		if _, dup := r.m[n]; dup {
			panic(r.kind + ": class registered twice: " + n)
		}
		r.m[n] = v
	}
}

// Lookup returns what name was registered with.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names lists the registered names, sorted.
func (r *Registry[T]) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
