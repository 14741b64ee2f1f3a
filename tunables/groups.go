package tunables

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// CovariantGroup is a set of tunables that change together: changing any
// of them costs Cost (say, a reboot). Name must not change once the group
// is part of a Groups.
type CovariantGroup struct {
	Name        string
	Cost        int
	Description string

	tunables []*Tunable
	index    map[string]*Tunable
	updated  bool
}

func checkGroupName(name string) error {
	if name == "" {
		return errors.New("covariant group name must not be empty")
	}
	if strings.HasPrefix(name, "$") {
		return fmt.Errorf("covariant group name %q must not start with '$'", name)
	}
	return nil
}

// NewGroup builds a covariant group of the given tunables, in order. The
// tunables must not belong to another group. Like mlos_bench, a new group
// starts out updated (running it has a cost).
func NewGroup(name string, cost int, description string, tunables ...*Tunable) (*CovariantGroup, error) {
	if err := checkGroupName(name); err != nil {
		return nil, err
	}
	g := &CovariantGroup{Name: name, Cost: cost, Description: description, index: map[string]*Tunable{}, updated: true}
	for _, t := range tunables {
		if t == nil || t.def == nil {
			return nil, fmt.Errorf("covariant group %q: nil tunable", name)
		}
		if t.group != nil {
			return nil, fmt.Errorf("covariant group %q: tunable %q already belongs to group %q", name, t.Name(), t.group.Name)
		}
		if _, dup := g.index[t.Name()]; dup {
			return nil, fmt.Errorf("covariant group %q: tunable %q is defined twice", name, t.Name())
		}
		g.index[t.Name()] = t
		g.tunables = append(g.tunables, t)
	}
	for _, t := range g.tunables {
		t.group = g
	}
	return g, nil
}

// Tunables returns the group's tunables in definition order.
func (g *CovariantGroup) Tunables() []*Tunable { return slices.Clone(g.tunables) }

// Get returns the named tunable, or nil.
func (g *CovariantGroup) Get(name string) *Tunable { return g.index[name] }

// Len returns the number of tunables.
func (g *CovariantGroup) Len() int { return len(g.tunables) }

// IsUpdated tells whether a value changed since the last Reset.
func (g *CovariantGroup) IsUpdated() bool { return g.updated }

// CurrentCost is Cost if the group was updated, else 0.
func (g *CovariantGroup) CurrentCost() int {
	if g.updated {
		return g.Cost
	}
	return 0
}

// Reset clears the updated flag: running with the current values costs
// nothing more.
func (g *CovariantGroup) Reset() { g.updated = false }

// IsDefaults tells whether every tunable has its default value.
func (g *CovariantGroup) IsDefaults() bool {
	for _, t := range g.tunables {
		if !t.IsDefault() {
			return false
		}
	}
	return true
}

// RestoreDefaults sets every tunable to its default value.
func (g *CovariantGroup) RestoreDefaults() {
	for _, t := range g.tunables {
		t.assign(t.def.defInt, t.def.defFloat, t.def.defStr)
	}
}

// Values returns the current values of the group's tunables.
func (g *CovariantGroup) Values() map[string]any {
	out := make(map[string]any, len(g.tunables))
	for _, t := range g.tunables {
		out[t.Name()] = t.Value()
	}
	return out
}

func (g *CovariantGroup) copy() *CovariantGroup {
	c := &CovariantGroup{Name: g.Name, Cost: g.Cost, Description: g.Description, updated: g.updated, index: make(map[string]*Tunable, len(g.tunables))}
	for _, t := range g.tunables {
		nt := &Tunable{def: t.def, i: t.i, f: t.f, s: t.s, group: c}
		c.tunables = append(c.tunables, nt)
		c.index[nt.Name()] = nt
	}
	return c
}

// sameDefinition tells why two groups' definitions differ ("" when they
// are the same): cost, tunable names, and every field of every tunable's
// definition except descriptions.
func sameDefinition(a, b *CovariantGroup) string {
	if a.Cost != b.Cost {
		return fmt.Sprintf("cost %d vs %d", a.Cost, b.Cost)
	}
	an := slices.Sorted(maps.Keys(a.index))
	bn := slices.Sorted(maps.Keys(b.index))
	if !slices.Equal(an, bn) {
		return fmt.Sprintf("tunables [%s] vs [%s]", strings.Join(an, ", "), strings.Join(bn, ", "))
	}
	for _, name := range an {
		if field := diffDefinition(a.index[name].def, b.index[name].def); field != "" {
			return fmt.Sprintf("tunable %q differs in %s", name, field)
		}
	}
	return ""
}

func diffDefinition(a, b *definition) string {
	if a == b {
		return ""
	}
	switch {
	case a.typ != b.typ:
		return "type"
	case a.defInt != b.defInt || a.defFloat != b.defFloat || a.defStr != b.defStr:
		return "default"
	case !slices.Equal(a.values, b.values):
		return "values"
	case !slices.Equal(a.valuesWeights, b.valuesWeights):
		return "values_weights"
	case a.lo != b.lo || a.hi != b.hi:
		return "range"
	case !slices.Equal(a.specialInt, b.specialInt) || !slices.Equal(a.specialFloat, b.specialFloat):
		return "special"
	case !slices.Equal(a.specialWeights, b.specialWeights) || !reflect.DeepEqual(a.rangeWeight, b.rangeWeight):
		return "special_weights/range_weight"
	case a.bins != b.bins:
		return "quantization_bins"
	case a.log != b.log:
		return "log"
	case !reflect.DeepEqual(a.dist, b.dist):
		return "distribution"
	case fmt.Sprintf("%#v", a.meta) != fmt.Sprintf("%#v", b.meta) && !(len(a.meta) == 0 && len(b.meta) == 0):
		return "meta"
	}
	return ""
}

// Groups is an ordered collection of covariant groups: the tunables of an
// environment, an optimizer or a whole experiment. The zero value is an
// empty collection.
type Groups struct {
	groups    []*CovariantGroup
	byName    map[string]*CovariantGroup
	byTunable map[string]*Tunable
}

// New collects groups (by reference) into a Groups. Group names and
// tunable names must be unique.
func New(groups ...*CovariantGroup) (*Groups, error) {
	g := &Groups{}
	for _, cg := range groups {
		if err := g.add(cg); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func (g *Groups) init() {
	if g.byName == nil {
		g.byName = map[string]*CovariantGroup{}
		g.byTunable = map[string]*Tunable{}
	}
}

func (g *Groups) add(cg *CovariantGroup) error {
	if cg == nil {
		return errors.New("nil covariant group")
	}
	g.init()
	if _, dup := g.byName[cg.Name]; dup {
		return fmt.Errorf("duplicate covariant group %q", cg.Name)
	}
	for _, t := range cg.tunables {
		if other, dup := g.byTunable[t.Name()]; dup {
			return fmt.Errorf("tunable %q of group %q is already defined in group %q", t.Name(), cg.Name, other.group.Name)
		}
	}
	g.groups = append(g.groups, cg)
	g.byName[cg.Name] = cg
	for _, t := range cg.tunables {
		g.byTunable[t.Name()] = t
	}
	return nil
}

// Merge adds other's groups (by reference) to g. A group name present in
// both must have the same definition (cost and tunables; descriptions and
// current values may differ, g's are kept); a tunable name may not appear
// in two different groups. On error g is unchanged.
func (g *Groups) Merge(other *Groups) error {
	if other == nil {
		return nil
	}
	var add []*CovariantGroup
	seen := map[string]string{} // tunable -> group, for the groups being added
	for _, og := range other.groups {
		if mine, ok := g.byName[og.Name]; ok {
			if mine != og {
				if why := sameDefinition(mine, og); why != "" {
					return fmt.Errorf("covariant group %q is defined twice with different definitions: %s", og.Name, why)
				}
			}
			continue
		}
		for _, t := range og.tunables {
			if mt, dup := g.byTunable[t.Name()]; dup {
				return fmt.Errorf("tunable %q of group %q is already defined in group %q", t.Name(), og.Name, mt.group.Name)
			}
			if gn, dup := seen[t.Name()]; dup {
				return fmt.Errorf("tunable %q of group %q is already defined in group %q", t.Name(), og.Name, gn)
			}
			seen[t.Name()] = og.Name
		}
		add = append(add, og)
	}
	for _, og := range add {
		if err := g.add(og); err != nil {
			return err // cannot happen: checked above
		}
	}
	return nil
}

// Subgroup returns a Groups made of the named groups, in the order given.
// The groups are shared, not copied: a value set through one view is seen
// through the other (as environments sharing tunables need).
func (g *Groups) Subgroup(names []string) (*Groups, error) {
	out := &Groups{}
	out.init()
	for _, name := range names {
		cg, ok := g.byName[name]
		if !ok {
			return nil, fmt.Errorf("unknown covariant group %q (known groups: %s)", name, strings.Join(g.GroupNames(), ", "))
		}
		if _, dup := out.byName[name]; dup {
			return nil, fmt.Errorf("covariant group %q is listed twice", name)
		}
		if err := out.add(cg); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Copy returns a deep copy: same definitions, independent values and
// updated flags.
func (g *Groups) Copy() *Groups {
	out := &Groups{}
	out.init()
	if g == nil {
		return out
	}
	for _, cg := range g.groups {
		_ = out.add(cg.copy())
	}
	return out
}

// Get returns the named tunable, or nil.
func (g *Groups) Get(name string) *Tunable { return g.byTunable[name] }

// Group returns the named covariant group, or nil.
func (g *Groups) Group(name string) *CovariantGroup { return g.byName[name] }

// Tunables returns all tunables, group by group in order.
func (g *Groups) Tunables() []*Tunable {
	var out []*Tunable
	for _, cg := range g.groups {
		out = append(out, cg.tunables...)
	}
	return out
}

// Groups returns the covariant groups in order.
func (g *Groups) Groups() []*CovariantGroup { return slices.Clone(g.groups) }

// GroupNames returns the names of the covariant groups in order.
func (g *Groups) GroupNames() []string {
	out := make([]string, len(g.groups))
	for i, cg := range g.groups {
		out[i] = cg.Name
	}
	return out
}

// Len returns the number of tunables.
func (g *Groups) Len() int { return len(g.byTunable) }

// Assign sets several values at once (see Tunable.Set for the accepted
// types). An empty map restores every default, as in mlos_bench. Unknown
// names and invalid values are errors, and then nothing is assigned.
func (g *Groups) Assign(values map[string]any) error {
	return g.assign(values, nil)
}

type pending struct {
	t    *Tunable
	i    int64
	f    float64
	s    string
	name string
}

// assign validates everything, then applies; locate turns an error about
// one name into a located one (nil: plain errors).
func (g *Groups) assign(values map[string]any, locate func(name string, unknown bool, err error) error) error {
	if len(values) == 0 {
		g.RestoreDefaults()
		return nil
	}
	names := slices.Sorted(maps.Keys(values))
	var errs []error
	var todo []pending
	for _, name := range names {
		t := g.byTunable[name]
		if t == nil {
			err := fmt.Errorf("unknown tunable %q%s", name, g.knownHint())
			if locate != nil {
				err = locate(name, true, err)
			}
			errs = append(errs, err)
			continue
		}
		i, f, s, err := t.def.coerce(values[name])
		if err != nil {
			if locate != nil {
				err = locate(name, false, err)
			}
			errs = append(errs, err)
			continue
		}
		todo = append(todo, pending{t: t, i: i, f: f, s: s, name: name})
	}
	if len(errs) == 1 {
		return errs[0]
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, p := range todo {
		p.t.assign(p.i, p.f, p.s)
	}
	return nil
}

func (g *Groups) knownHint() string {
	names := slices.Sorted(maps.Keys(g.byTunable))
	if len(names) == 0 {
		return " (there are no tunables)"
	}
	const maxNames = 20
	more := ""
	if len(names) > maxNames {
		more = fmt.Sprintf(", ... (%d more)", len(names)-maxNames)
		names = names[:maxNames]
	}
	return " (known tunables: " + strings.Join(names, ", ") + more + ")"
}

// Values returns the current value of every tunable (int64, float64 or
// string).
func (g *Groups) Values() map[string]any {
	out := make(map[string]any, len(g.byTunable))
	for name, t := range g.byTunable {
		out[name] = t.Value()
	}
	return out
}

// StringValues returns the canonical text of every tunable's value (what
// storage keeps).
func (g *Groups) StringValues() map[string]string {
	out := make(map[string]string, len(g.byTunable))
	for name, t := range g.byTunable {
		out[name] = t.String()
	}
	return out
}

// IsDefaults tells whether every tunable has its default value.
func (g *Groups) IsDefaults() bool {
	for _, cg := range g.groups {
		if !cg.IsDefaults() {
			return false
		}
	}
	return true
}

// RestoreDefaults sets every tunable to its default value (groups whose
// values change become updated).
func (g *Groups) RestoreDefaults() {
	for _, cg := range g.groups {
		cg.RestoreDefaults()
	}
}

// ResetUpdated clears the updated flag of every group.
func (g *Groups) ResetUpdated() {
	for _, cg := range g.groups {
		cg.Reset()
	}
}

// IsUpdated tells whether any group was updated.
func (g *Groups) IsUpdated() bool {
	for _, cg := range g.groups {
		if cg.updated {
			return true
		}
	}
	return false
}

// String returns mlos_bench's canonical text of the tunables, str() of a
// TunableGroups:
//
//	{ group::name[type](range:default)=value, ... }
//
// with groups sorted by descending cost then name, tunables by name, ranges
// printed as Python tuples "(0, 100)" and categories as Python lists
// "['a', 'b']".
func (g *Groups) String() string {
	groups := slices.Clone(g.groups)
	slices.SortStableFunc(groups, func(a, b *CovariantGroup) int {
		if c := cmp.Compare(b.Cost, a.Cost); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var parts []string
	for _, cg := range groups {
		ts := slices.Clone(cg.tunables)
		slices.SortStableFunc(ts, func(a, b *Tunable) int { return strings.Compare(a.Name(), b.Name()) })
		for _, t := range ts {
			parts = append(parts, cg.Name+"::"+t.repr())
		}
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// Hash returns the hex SHA-256 of String(): the identity of a
// configuration in storage (mlos_bench's config_hash).
func (g *Groups) Hash() string {
	sum := sha256.Sum256([]byte(g.String()))
	return hex.EncodeToString(sum[:])
}
