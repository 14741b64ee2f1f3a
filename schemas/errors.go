package schemas

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/internal/suggest"
)

// This file turns the validator's error tree into a short list of located,
// plain-language problems:
//
//   - allOf / $ref / group nodes are flattened;
//   - for oneOf / anyOf over classes (or over tunable "type"s), the branches
//     that failed because their "class" (or "type") did not match are set
//     aside and only the branch the config meant is reported; when no branch
//     matches, one "unknown class" problem lists the known classes;
//   - "unknown property" problems that are only side effects of another
//     failure (the property is declared by the schema, but the branch that
//     declares it failed) are dropped when a real problem is reported;
//   - a schema object may carry an "errorMessage" string (the same keyword
//     VS Code understands) that replaces the message of a failed pattern, not,
//     anyOf, oneOf or propertyNames at that object.
//
// Messages never include the offending value (it could be a secret), except
// class and tunable type names.

// discriminators are the members whose value selects a oneOf/anyOf branch.
var discriminators = []string{"class", "type"}

type leafKind int

const (
	leafOther     leafKind = iota
	leafType               // wrong JSON type; want/got set
	leafUnknown            // unknown property; holder set
	leafDisc               // wrong value of a discriminator member; want set
	leafRequired           // missing property; prop set
	leafAmbiguous          // more than one oneOf branch matched
)

type leaf struct {
	loc    []string
	msg    string
	atKey  bool
	kind   leafKind
	holder string   // leafUnknown: location of the schema that rejected it
	want   []string // leafType: JSON type names; leafDisc: allowed values (JSON)
	got    string   // leafType: JSON type of the value
	prop   string   // leafRequired: the missing property
}

type reducer struct {
	c   *compiled
	doc *source.Doc
}

var printer = message.NewPrinter(language.English)

func (r *reducer) reduce(e *jsonschema.ValidationError) []leaf {
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		var out []leaf
		for _, cause := range e.Causes {
			out = append(out, r.reduce(cause)...)
		}
		return out
	case *kind.AnyOf:
		if msg := r.c.errorMessage(e.SchemaURL); msg != "" {
			return []leaf{{loc: loc, msg: msg}}
		}
		return r.pickBranch(loc, e.Causes)
	case *kind.OneOf:
		if len(k.Subschemas) > 0 {
			return []leaf{{loc: loc, kind: leafAmbiguous,
				msg: fmt.Sprintf("matches more than one alternative (#%d and #%d)", k.Subschemas[0]+1, k.Subschemas[1]+1)}}
		}
		if msg := r.c.errorMessage(e.SchemaURL); msg != "" {
			return []leaf{{loc: loc, msg: msg}}
		}
		return r.pickBranch(loc, e.Causes)
	case *kind.FalseSchema:
		u := e.SchemaURL
		switch {
		case strings.HasSuffix(u, "/unevaluatedProperties") || strings.HasSuffix(u, "/additionalProperties"):
			if len(loc) == 0 {
				break
			}
			return []leaf{unknownProp(loc, u[:strings.LastIndex(u, "/")])}
		case strings.HasSuffix(u, "/unevaluatedItems") || strings.HasSuffix(u, "/items"):
			return []leaf{{loc: loc, msg: "unexpected array item"}}
		}
		return []leaf{{loc: loc, msg: "is not allowed here"}}
	case *kind.AdditionalProperties:
		out := make([]leaf, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, unknownProp(appendPath(loc, p), e.SchemaURL))
		}
		return out
	case *kind.Required:
		out := make([]leaf, 0, len(k.Missing))
		for _, p := range k.Missing {
			out = append(out, leaf{loc: loc, kind: leafRequired, prop: p, msg: fmt.Sprintf("missing required property %q", p)})
		}
		return out
	case *kind.DependentRequired:
		out := make([]leaf, 0, len(k.Missing))
		for _, p := range k.Missing {
			out = append(out, leaf{loc: appendPath(loc, k.Prop), atKey: true, msg: fmt.Sprintf("%q also requires %q", k.Prop, p)})
		}
		return out
	case *kind.Dependency:
		out := make([]leaf, 0, len(k.Missing))
		for _, p := range k.Missing {
			out = append(out, leaf{loc: appendPath(loc, k.Prop), atKey: true, msg: fmt.Sprintf("%q also requires %q", k.Prop, p)})
		}
		return out
	case *kind.PropertyNames:
		// Note: jsonschema v6 may report a wrong instance location for
		// propertyNames; the embedded schemas use patternProperties plus
		// additionalProperties {"not": {}} instead.
		name := appendPath(loc, k.Property)
		if msg := r.c.errorMessage(e.SchemaURL); msg != "" {
			return []leaf{{loc: name, atKey: true, msg: fmt.Sprintf("invalid name %q: %s", k.Property, msg)}}
		}
		var why []string
		for _, cause := range e.Causes {
			for _, l := range r.reduce(cause) {
				if l.msg != "" {
					why = append(why, l.msg)
				}
			}
		}
		if len(why) == 0 {
			why = []string{"not allowed"}
		}
		return []leaf{{loc: name, atKey: true, msg: fmt.Sprintf("invalid name %q: %s", k.Property, strings.Join(why, "; "))}}
	case *kind.Type:
		return []leaf{{loc: loc, kind: leafType, want: k.Want, got: k.Got}}
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = display(w)
		}
		if isDiscriminator(loc) {
			return []leaf{{loc: loc, kind: leafDisc, want: want}}
		}
		return []leaf{{loc: loc, msg: "must be one of: " + strings.Join(want, ", ")}}
	case *kind.Const:
		if isDiscriminator(loc) {
			return []leaf{{loc: loc, kind: leafDisc, want: []string{display(k.Want)}}}
		}
		return []leaf{{loc: loc, msg: "must be " + display(k.Want)}}
	case *kind.Pattern:
		if msg := r.c.errorMessage(e.SchemaURL); msg != "" {
			return []leaf{{loc: loc, msg: msg}}
		}
		return []leaf{{loc: loc, msg: fmt.Sprintf("must match the regular expression %s", k.Want)}}
	case *kind.Not:
		msg := r.c.errorMessage(e.SchemaURL)
		if msg == "" {
			msg = "is not allowed here"
		}
		if strings.HasSuffix(e.SchemaURL, "/additionalProperties") && len(loc) > 0 {
			// A member whose name matched none of the allowed patterns.
			return []leaf{{loc: loc, atKey: true, msg: fmt.Sprintf("invalid name %q: %s", loc[len(loc)-1], msg)}}
		}
		// {"not": {}} rejects any value: the member should not be there at
		// all, so point at its name.
		n, _ := r.c.node(e.SchemaURL)["not"].(map[string]any)
		return []leaf{{loc: loc, atKey: n != nil && len(n) == 0 && len(loc) > 0, msg: msg}}
	case *kind.Minimum:
		return []leaf{{loc: loc, msg: "must be >= " + ratString(k.Want)}}
	case *kind.Maximum:
		return []leaf{{loc: loc, msg: "must be <= " + ratString(k.Want)}}
	case *kind.ExclusiveMinimum:
		return []leaf{{loc: loc, msg: "must be > " + ratString(k.Want)}}
	case *kind.ExclusiveMaximum:
		return []leaf{{loc: loc, msg: "must be < " + ratString(k.Want)}}
	case *kind.MultipleOf:
		return []leaf{{loc: loc, msg: "must be a multiple of " + ratString(k.Want)}}
	case *kind.MinItems:
		if k.Want == 1 {
			return []leaf{{loc: loc, msg: "must not be empty"}}
		}
		return []leaf{{loc: loc, msg: fmt.Sprintf("must have at least %d items, has %d", k.Want, k.Got)}}
	case *kind.MaxItems:
		return []leaf{{loc: loc, msg: fmt.Sprintf("must have at most %d items, has %d", k.Want, k.Got)}}
	case *kind.MinProperties:
		if k.Want == 1 {
			return []leaf{{loc: loc, msg: "must not be empty"}}
		}
		return []leaf{{loc: loc, msg: fmt.Sprintf("must have at least %d properties, has %d", k.Want, k.Got)}}
	case *kind.MaxProperties:
		return []leaf{{loc: loc, msg: fmt.Sprintf("must have at most %d properties, has %d", k.Want, k.Got)}}
	case *kind.MinLength:
		return []leaf{{loc: loc, msg: fmt.Sprintf("must be at least %d characters long", k.Want)}}
	case *kind.MaxLength:
		return []leaf{{loc: loc, msg: fmt.Sprintf("must be at most %d characters long", k.Want)}}
	case *kind.UniqueItems:
		return []leaf{{loc: appendPath(loc, strconv.Itoa(k.Duplicates[1])),
			msg: fmt.Sprintf("duplicate of item %d: items must be unique", k.Duplicates[0])}}
	case *kind.Format:
		if msg := r.c.errorMessage(e.SchemaURL); msg != "" {
			return []leaf{{loc: loc, msg: msg}}
		}
		return []leaf{{loc: loc, msg: fmt.Sprintf("is not a valid %s", k.Want)}}
	}
	return []leaf{{loc: loc, msg: e.ErrorKind.LocalizedString(printer)}}
}

func unknownProp(loc []string, holder string) leaf {
	return leaf{loc: loc, atKey: true, kind: leafUnknown, holder: holder,
		msg: fmt.Sprintf("unknown property %q", loc[len(loc)-1])}
}

func isDiscriminator(loc []string) bool {
	return len(loc) > 0 && slices.Contains(discriminators, loc[len(loc)-1])
}

// pickBranch reports the failure of a oneOf/anyOf at loc from its failed
// branches (causes, one per branch).
func (r *reducer) pickBranch(loc []string, causes []*jsonschema.ValidationError) []leaf {
	type branch struct{ leaves []leaf }
	var live []branch
	mismatchKey := ""
	var wants []string
	for _, cause := range causes {
		leaves := r.reduce(cause)
		key, want, ok := mismatch(loc, leaves)
		if ok {
			mismatchKey = key
			for _, w := range want {
				if !slices.Contains(wants, w) {
					wants = append(wants, w)
				}
			}
			continue
		}
		live = append(live, branch{leaves})
	}
	if len(live) == 0 && mismatchKey != "" {
		if _, present := r.member(loc, mismatchKey); !present {
			return []leaf{{loc: loc, kind: leafRequired, prop: mismatchKey,
				msg: fmt.Sprintf("missing required property %q", mismatchKey)}}
		}
		return []leaf{{loc: appendPath(loc, mismatchKey), kind: leafDisc, want: wants}}
	}
	// Branches that only failed because the value has the wrong JSON type
	// are merged into one "expected A or B" problem unless another branch
	// got further.
	var deeper []branch
	var types []string
	got := ""
	for _, b := range live {
		onlyType := len(b.leaves) > 0
		for _, l := range b.leaves {
			if l.kind != leafType || !slices.Equal(l.loc, loc) {
				onlyType = false
				break
			}
		}
		if !onlyType {
			deeper = append(deeper, b)
			continue
		}
		for _, l := range b.leaves {
			got = l.got
			for _, w := range l.want {
				if !slices.Contains(types, w) {
					types = append(types, w)
				}
			}
		}
	}
	if len(deeper) == 0 {
		if len(types) == 0 {
			return []leaf{{loc: loc, msg: "matches none of the allowed alternatives"}}
		}
		return []leaf{{loc: loc, kind: leafType, want: types, got: got}}
	}
	best, bestScore, bestDepth := 0, -1, -1
	for i, b := range deeper {
		score := len(r.c.dropSideEffects(b.leaves))
		depth := 0
		for _, l := range b.leaves {
			depth = max(depth, len(l.loc))
		}
		if bestScore < 0 || score < bestScore || (score == bestScore && depth > bestDepth) {
			best, bestScore, bestDepth = i, score, depth
		}
	}
	return deeper[best].leaves
}

// mismatch tells whether a branch failed because of the value (or absence)
// of a discriminator member of the object at loc.
func mismatch(loc []string, leaves []leaf) (key string, want []string, ok bool) {
	for _, l := range leaves {
		switch {
		case l.kind == leafDisc && len(l.loc) == len(loc)+1 && slices.Equal(l.loc[:len(loc)], loc):
			return l.loc[len(loc)], l.want, true
		case l.kind == leafRequired && slices.Equal(l.loc, loc) && slices.Contains(discriminators, l.prop):
			return l.prop, nil, true
		}
	}
	return "", nil, false
}

// member returns the instance value of key in the object at loc.
func (r *reducer) member(loc []string, key string) (*json5.Node, bool) {
	if r.doc == nil || r.doc.Root == nil {
		return nil, false
	}
	n, _, ok := r.doc.Root.Locate(loc)
	if !ok || n.Kind != json5.Object {
		return nil, false
	}
	v := n.Get(key)
	return v, v != nil
}

// finish applies the clean-up rules to the reduced leaves of one document
// and gives every leaf its final message.
func finish(leaves []leaf, c *compiled, r *reducer) []leaf {
	// A "matches more than one" problem is only interesting alone.
	if len(leaves) > 1 {
		leaves = slices.DeleteFunc(slices.Clone(leaves), func(l leaf) bool { return l.kind == leafAmbiguous })
	}
	leaves = c.dropSideEffects(leaves)
	for i, l := range leaves {
		if l.kind == leafUnknown {
			leaves[i].msg += c.unknownHint(l, r)
		}
	}

	// Merge per location: a type error hides every other problem with the
	// same value; type errors and discriminator errors are merged.
	byLoc := map[string][]int{}
	var order []string
	for i, l := range leaves {
		p := source.Pointer(l.loc)
		if l.atKey {
			p += "\x00key"
		}
		if _, ok := byLoc[p]; !ok {
			order = append(order, p)
		}
		byLoc[p] = append(byLoc[p], i)
	}
	var out []leaf
	for _, p := range order {
		idx := byLoc[p]
		var typ, disc *leaf
		var rest []leaf
		for _, i := range idx {
			l := leaves[i]
			switch l.kind {
			case leafType:
				if typ == nil {
					typ = &l
				} else {
					for _, w := range l.want {
						if !slices.Contains(typ.want, w) {
							typ.want = append(typ.want, w)
						}
					}
				}
			case leafDisc:
				if disc == nil {
					disc = &l
				} else {
					for _, w := range l.want {
						if !slices.Contains(disc.want, w) {
							disc.want = append(disc.want, w)
						}
					}
				}
			default:
				rest = append(rest, l)
			}
		}
		switch {
		case typ != nil:
			typ.msg = fmt.Sprintf("expected %s, got %s", orList(typ.want), typ.got)
			out = append(out, *typ)
		default:
			if disc != nil {
				disc.msg = r.discMessage(*disc)
				out = append(out, *disc)
			}
			out = append(out, rest...)
		}
	}
	return out
}

// discMessage words a wrong class (or tunable type) value.
func (r *reducer) discMessage(l leaf) string {
	key := l.loc[len(l.loc)-1]
	if key != "class" {
		return "must be one of: " + strings.Join(l.want, ", ")
	}
	var got string
	if n, ok := r.member(l.loc[:len(l.loc)-1], key); ok && n.Kind == json5.String {
		got = n.Str
	}
	known := make([]string, 0, len(l.want))
	for _, w := range l.want {
		var s string
		if json.Unmarshal([]byte(w), &s) == nil {
			known = append(known, s)
		}
	}
	names, more := classNames(got, relevantClasses(got, known))
	msg := fmt.Sprintf("unknown class %q; known classes: %s", got, strings.Join(names, ", "))
	if more {
		msg += " (other spellings, such as the full module path, work too)"
	}
	return msg
}

// classNames keeps one name per class (the last dotted component): the
// first one listed in the schema, or one written with the same leading
// package (mlos_bench or bench) as the unknown class. more reports whether
// names were left out.
func classNames(got string, known []string) (names []string, more bool) {
	lead, _, _ := strings.Cut(got, ".")
	pick := map[string]string{}
	var order []string
	for _, k := range known {
		short := k[strings.LastIndex(k, ".")+1:]
		cur, seen := pick[short]
		if !seen {
			order = append(order, short)
			pick[short] = k
			continue
		}
		more = true
		if l, _, _ := strings.Cut(k, "."); l == lead {
			if cl, _, _ := strings.Cut(cur, "."); cl != lead {
				pick[short] = k
			}
		}
	}
	for _, short := range order {
		names = append(names, pick[short])
	}
	return names, more
}

// relevantClasses narrows the list of known classes to those of the same
// kind (environments, services, ...) as the unknown one, and hides
// mlos_bench's test-only classes unless the unknown one is a test class.
func relevantClasses(got string, known []string) []string {
	parts := strings.Split(got, ".")
	ns := ""
	for _, word := range []string{"environments", "optimizers", "schedulers", "services", "storage"} {
		if slices.Contains(parts, word) {
			ns = word
			break
		}
	}
	tests := strings.HasPrefix(got, "mlos_bench.tests.")
	var out []string
	for _, k := range known {
		if !tests && strings.HasPrefix(k, "mlos_bench.tests.") {
			continue
		}
		if ns != "" && !slices.Contains(strings.Split(k, "."), ns) {
			continue
		}
		out = append(out, k)
	}
	if len(out) == 0 {
		return known
	}
	return out
}

// unknownHint is " (did you mean "NAME"?)" for an unknown property that
// is a few edits from a property its schema declares (a typo such as
// "rnage" for "range"), preferring names the object does not have yet;
// "" when none is close.
func (c *compiled) unknownHint(l leaf, r *reducer) string {
	name := l.loc[len(l.loc)-1]
	d := c.declaredAt(l.holder)
	var have *json5.Node
	if r != nil && r.doc != nil && r.doc.Root != nil {
		if n, _, ok := r.doc.Root.Locate(l.loc[:len(l.loc)-1]); ok && n != nil && n.Kind == json5.Object {
			have = n
		}
	}
	var absent, present []string
	for k := range d.names {
		if have != nil && have.Get(k) != nil {
			present = append(present, k)
		} else {
			absent = append(absent, k)
		}
	}
	slices.Sort(absent)
	slices.Sort(present)
	// Stricter than suggest's own limit: a schema has many properties,
	// and a wrong guess ("startup": "status"?) misleads.
	limit := max(1, len([]rune(name))/4)
	for _, cands := range [][]string{absent, present} {
		if c, ok := suggest.Closest(name, cands); ok && suggest.Distance(name, c) <= limit {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
	}
	return ""
}

// dropSideEffects removes "unknown property" problems for properties that
// the rejecting schema does declare somewhere (so they were only left
// unevaluated because the branch declaring them failed), as long as some
// other problem remains to explain the failure.
func (c *compiled) dropSideEffects(leaves []leaf) []leaf {
	var keep []leaf
	dropped := 0
	for _, l := range leaves {
		if l.kind == leafUnknown && c.declares(l.holder, l.loc[len(l.loc)-1]) {
			dropped++
			continue
		}
		keep = append(keep, l)
	}
	if dropped == 0 || len(keep) == 0 {
		return leaves
	}
	return keep
}

func orList(items []string) string {
	switch len(items) {
	case 0:
		return "nothing"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// display renders a schema value (from an enum or const) as JSON.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// --- reading the raw schema documents ---

// node returns the raw schema object at an absolute schema location
// ("<file URL>#<JSON pointer>"), or nil.
func (c *compiled) node(loc string) map[string]any {
	base, frag, _ := strings.Cut(loc, "#")
	var cur any = c.raw[base]
	if cur == nil {
		return nil
	}
	for _, tok := range source.SplitPointer(frag) {
		if strings.Contains(tok, "%") {
			if t, err := url.PathUnescape(tok); err == nil {
				tok = t
			}
		}
		switch v := cur.(type) {
		case map[string]any:
			cur = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}

func (c *compiled) errorMessage(loc string) string {
	s, _ := c.node(loc)["errorMessage"].(string)
	return s
}

// declared is the set of property names a schema object accepts through
// its own keywords and in-place applicators (allOf, anyOf, oneOf, if, then,
// else, dependentSchemas, $ref), whether or not those branches matched.
type declared struct {
	names    map[string]bool
	patterns []*regexp.Regexp
	any      bool // additionalProperties with a schema other than false
}

func (c *compiled) declaredAt(holder string) *declared {
	if v, ok := c.decl.Load(holder); ok {
		return v.(*declared)
	}
	d := &declared{names: map[string]bool{}}
	c.collect(holder, d, map[string]bool{})
	c.decl.Store(holder, d)
	return d
}

func (c *compiled) declares(holder, name string) bool {
	d := c.declaredAt(holder)
	if d.any || d.names[name] {
		return true
	}
	for _, re := range d.patterns {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

func (c *compiled) collect(loc string, d *declared, seen map[string]bool) {
	if seen[loc] {
		return
	}
	seen[loc] = true
	n := c.node(loc)
	if n == nil {
		return
	}
	if props, ok := n["properties"].(map[string]any); ok {
		for k := range props {
			d.names[k] = true
		}
	}
	if pats, ok := n["patternProperties"].(map[string]any); ok {
		for p := range pats {
			if re, err := regexp.Compile(p); err == nil {
				d.patterns = append(d.patterns, re)
			}
		}
	}
	if ap, ok := n["additionalProperties"]; ok && ap != false {
		d.any = true
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := n[kw].([]any); ok {
			for i := range list {
				c.collect(loc+"/"+kw+"/"+strconv.Itoa(i), d, seen)
			}
		}
	}
	for _, kw := range []string{"if", "then", "else"} {
		if _, ok := n[kw].(map[string]any); ok {
			c.collect(loc+"/"+kw, d, seen)
		}
	}
	if deps, ok := n["dependentSchemas"].(map[string]any); ok {
		for k := range deps {
			c.collect(loc+"/dependentSchemas/"+escapeToken(k), d, seen)
		}
	}
	if ref, ok := n["$ref"].(string); ok {
		base, _, _ := strings.Cut(loc, "#")
		if u, err := url.Parse(base); err == nil {
			if t, err := u.Parse(ref); err == nil {
				frag := t.Fragment
				t.Fragment = ""
				c.collect(t.String()+"#"+frag, d, seen)
			}
		}
	}
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}
