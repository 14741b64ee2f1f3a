package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistry(t *testing.T) {
	r := New[int]("things")
	r.Register(1, "a.One", "One")
	r.Register(2, "Two")
	if v, ok := r.Lookup("One"); !ok || v != 1 {
		t.Errorf("Lookup(One) = %v %v", v, ok)
	}
	if _, ok := r.Lookup("Three"); ok {
		t.Error("unknown name found")
	}
	if diff := cmp.Diff([]string{"One", "Two", "a.One"}, r.Names()); diff != "" {
		t.Error(diff)
	}
	defer func() {
		if recover() == nil {
			t.Error("a duplicate name must panic")
		}
	}()
	r.Register(3, "Two")
}
