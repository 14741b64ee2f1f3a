package tunables

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/pyfmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
)

// maxReportedErrors bounds how many problems one parse reports.
const maxReportedErrors = 20

// errList collects located errors.
type errList struct{ errs []error }

func (l *errList) add(err error) {
	if err != nil && len(l.errs) < maxReportedErrors {
		l.errs = append(l.errs, err)
	}
}

func (l *errList) full() bool { return len(l.errs) >= maxReportedErrors }

func (l *errList) err() error {
	switch len(l.errs) {
	case 0:
		return nil
	case 1:
		return l.errs[0]
	}
	return errors.Join(l.errs...)
}

// keyErr reports a problem with the key of member key of the object at ref.
func keyErr(ref source.Ref, key string, format string, args ...any) *source.Error {
	if ref.Doc == nil {
		return ref.Child(key).Errorf(format, args...)
	}
	return ref.Doc.KeyErrorf(append(slices.Clone(ref.Path), key), format, args...)
}

// ParseParams reads a tunable-params document, or the part of a document
// ref points at:
//
//	{ "<group>": { "cost": 1, "description": "...", "params": { "<name>": {...} } }, ... }
//
// Every problem is reported as a *source.Error (file:line:col and JSON
// path); several problems are joined with errors.Join.
func ParseParams(ref source.Ref) (*Groups, error) {
	node := ref.Node()
	if node == nil {
		return nil, ref.Errorf("no tunable-params object here")
	}
	if node.Kind != json5.Object {
		return nil, ref.Errorf("tunable params must be an object of covariant groups, got %s", node.Kind)
	}
	var errs errList
	out := &Groups{}
	out.init()
	defined := map[string]string{} // tunable -> group
	for _, m := range node.Members {
		if errs.full() {
			break
		}
		switch {
		case m.Key == "$schema":
			if m.Value.Kind != json5.String {
				errs.add(ref.Child(m.Key).Errorf("$schema must be a string, got %s", m.Value.Kind))
			}
			continue
		case m.Key == "":
			errs.add(keyErr(ref, m.Key, "covariant group name must not be empty"))
			continue
		case strings.HasPrefix(m.Key, "$"):
			errs.add(keyErr(ref, m.Key, "covariant group name %q must not start with '$'", m.Key))
			continue
		}
		cg := parseGroup(ref.Child(m.Key), m.Key, m.Value, defined, &errs)
		if cg != nil {
			if err := out.add(cg); err != nil {
				errs.add(ref.Child(m.Key).Errorf("%v", err))
			}
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return out, nil
}

var groupKeys = []string{"cost", "description", "params"}

func parseGroup(ref source.Ref, name string, node *json5.Node, defined map[string]string, errs *errList) *CovariantGroup {
	if node.Kind != json5.Object {
		errs.add(ref.Errorf("covariant group %q must be an object with cost and params, got %s", name, node.Kind))
		return nil
	}
	ok := true
	for _, m := range node.Members {
		if !slices.Contains(groupKeys, m.Key) {
			errs.add(keyErr(ref, m.Key, "unknown property %q in covariant group %q (allowed: %s)", m.Key, name, strings.Join(groupKeys, ", ")))
			ok = false
		}
	}
	cost := 0
	if c := node.Get("cost"); c == nil {
		errs.add(ref.Errorf("covariant group %q needs a cost", name))
		ok = false
	} else if c.Kind != json5.Number {
		errs.add(ref.Child("cost").Errorf("cost must be a number, got %s", c.Kind))
		ok = false
	} else {
		// Python int(): truncation toward zero.
		f := math.Trunc(c.Float)
		if c.IsInt {
			f = float64(c.Int)
		}
		if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			errs.add(ref.Child("cost").Errorf("cost %s is not a usable integer", c.Raw))
			ok = false
		} else if c.IsInt {
			cost = int(c.Int)
		} else {
			cost = int(f)
		}
	}
	desc := ""
	if d := node.Get("description"); d != nil {
		if d.Kind != json5.String {
			errs.add(ref.Child("description").Errorf("description must be a string, got %s", d.Kind))
			ok = false
		} else {
			desc = d.Str
		}
	}
	params := node.Get("params")
	var tunables []*Tunable
	switch {
	case params == nil:
		errs.add(ref.Errorf("covariant group %q needs params (an object of tunables)", name))
		ok = false
	case params.Kind != json5.Object:
		errs.add(ref.Child("params").Errorf("params must be an object of tunables, got %s", params.Kind))
		ok = false
	case len(params.Members) == 0:
		errs.add(ref.Child("params").Errorf("params must define at least one tunable"))
		ok = false
	default:
		pref := ref.Child("params")
		for _, m := range params.Members {
			if errs.full() {
				return nil
			}
			if err := checkName(m.Key); err != nil {
				errs.add(keyErr(pref, m.Key, "%v", err))
				ok = false
				continue
			}
			if other, dup := defined[m.Key]; dup {
				if other == name {
					errs.add(keyErr(pref, m.Key, "tunable %q is defined twice in group %q", m.Key, name))
				} else {
					errs.add(keyErr(pref, m.Key, "tunable %q is already defined in group %q (tunable names must be unique across groups)", m.Key, other))
				}
				ok = false
				continue
			}
			defined[m.Key] = name
			t, err := parseTunable(pref.Child(m.Key), m.Key, m.Value)
			if err != nil {
				errs.add(err)
				ok = false
				continue
			}
			tunables = append(tunables, t)
		}
	}
	if !ok {
		return nil
	}
	cg, err := NewGroup(name, cost, desc, tunables...)
	if err != nil {
		errs.add(ref.Errorf("%v", err))
		return nil
	}
	return cg
}

var (
	commonKeys      = []string{"type", "description", "default", "meta"}
	categoricalKeys = []string{"values", "values_weights"}
	numericKeys     = []string{"range", "special", "special_weights", "range_weight", "quantization_bins", "log", "distribution"}
)

// numberValue turns a number node into a json.Number that keeps whether
// Python would read it as an int or a float.
func numberValue(n *json5.Node) json.Number {
	if n.Raw != "" {
		return json.Number(n.Raw)
	}
	if n.IsInt {
		return json.Number(strconv.FormatInt(n.Int, 10))
	}
	return json.Number(pyfmt.FloatRepr(n.Float))
}

func scalarValue(n *json5.Node) any {
	switch n.Kind {
	case json5.String:
		return n.Str
	case json5.Bool:
		return n.Bool
	case json5.Number:
		return numberValue(n)
	}
	return nil
}

func parseTunable(ref source.Ref, name string, node *json5.Node) (*Tunable, error) {
	if node.Kind != json5.Object {
		return nil, ref.Errorf("tunable %q must be an object, got %s", name, node.Kind)
	}
	tn := node.Get("type")
	if tn == nil {
		return nil, ref.Errorf("tunable %q needs a type (int, float or categorical)", name)
	}
	if tn.Kind != json5.String {
		return nil, ref.Child("type").Errorf("type must be a string (int, float or categorical), got %s", tn.Kind)
	}
	typ := Type(tn.Str)
	allowed := slices.Clone(commonKeys)
	switch typ {
	case Categorical:
		allowed = append(allowed, categoricalKeys...)
	case Int, Float:
		allowed = append(allowed, numericKeys...)
	default:
		return nil, ref.Child("type").Errorf("unknown tunable type %q (want int, float or categorical)", tn.Str)
	}
	for _, m := range node.Members {
		if !slices.Contains(allowed, m.Key) {
			return nil, keyErr(ref, m.Key, "property %q is not allowed in a %s tunable (allowed: %s)", m.Key, typ, strings.Join(allowed, ", "))
		}
	}
	d := Def{Type: typ}
	if n := node.Get("description"); n != nil {
		if n.Kind != json5.String {
			return nil, ref.Child("description").Errorf("description must be a string, got %s", n.Kind)
		}
		d.Description = n.Str
	}
	dn := node.Get("default")
	if dn == nil {
		return nil, ref.Errorf("tunable %q needs a default value", name)
	}
	switch {
	case typ == Categorical && (dn.Kind == json5.String || dn.Kind == json5.Bool || dn.Kind == json5.Number):
	case typ != Categorical && dn.Kind == json5.Number:
	default:
		want := "a number"
		if typ == Categorical {
			want = "a string, number or boolean"
		} else if typ == Int {
			want = "an integer"
		}
		return nil, ref.Child("default").Errorf("the default of a %s tunable must be %s, got %s", typ, want, dn.Kind)
	}
	d.Default = scalarValue(dn)

	if n := node.Get("values"); n != nil {
		if n.Kind != json5.Array || len(n.Elems) == 0 {
			return nil, ref.Child("values").Errorf("values must be a non-empty array, got %s", describeNode(n))
		}
		for i, e := range n.Elems {
			if e.Kind != json5.String && e.Kind != json5.Number && e.Kind != json5.Bool {
				return nil, ref.Child("values").Index(i).Errorf("categorical values must be strings, numbers or booleans, got %s", e.Kind)
			}
			d.Values = append(d.Values, scalarValue(e))
		}
	}
	var err error
	if d.ValuesWeights, err = weightsField(ref, node, "values_weights"); err != nil {
		return nil, err
	}
	if d.SpecialWeights, err = weightsField(ref, node, "special_weights"); err != nil {
		return nil, err
	}
	if n := node.Get("range"); n != nil {
		if n.Kind != json5.Array || len(n.Elems) != 2 {
			return nil, ref.Child("range").Errorf("range must be an array of two numbers [lo, hi], got %s", describeNode(n))
		}
		for i, e := range n.Elems {
			if e.Kind != json5.Number {
				return nil, ref.Child("range").Index(i).Errorf("range bounds must be numbers, got %s", e.Kind)
			}
			d.Range = append(d.Range, numberValue(e))
		}
	}
	if n := node.Get("special"); n != nil {
		if n.Kind != json5.Array || len(n.Elems) == 0 {
			return nil, ref.Child("special").Errorf("special must be a non-empty array of numbers, got %s", describeNode(n))
		}
		for i, e := range n.Elems {
			if e.Kind != json5.Number {
				return nil, ref.Child("special").Index(i).Errorf("special values of a numeric tunable must be numbers, got %s (such a value could never be assigned)", e.Kind)
			}
			d.Special = append(d.Special, numberValue(e))
		}
	}
	if n := node.Get("range_weight"); n != nil {
		if n.Kind != json5.Number {
			return nil, ref.Child("range_weight").Errorf("range_weight must be a number, got %s", n.Kind)
		}
		rw := n.Float
		d.RangeWeight = &rw
	}
	if n := node.Get("quantization_bins"); n != nil {
		if n.Kind != json5.Number || n.Float != math.Trunc(n.Float) || math.IsInf(n.Float, 0) {
			return nil, ref.Child("quantization_bins").Errorf("quantization_bins must be an integer greater than 1, got %s", describeNode(n))
		}
		if n.Float < 2 || n.Float > math.MaxInt32 {
			return nil, ref.Child("quantization_bins").Errorf("quantization_bins must be an integer between 2 and %d, got %s", math.MaxInt32, n.Raw)
		}
		d.QuantizationBins = int(n.Float)
	}
	if n := node.Get("log"); n != nil {
		if n.Kind != json5.Bool {
			return nil, ref.Child("log").Errorf("log must be true or false, got %s", n.Kind)
		}
		d.Log = n.Bool
	}
	if n := node.Get("distribution"); n != nil {
		dist, err := parseDistribution(ref.Child("distribution"), n)
		if err != nil {
			return nil, err
		}
		d.Distribution = dist
	}
	if n := node.Get("meta"); n != nil {
		if n.Kind != json5.Object {
			return nil, ref.Child("meta").Errorf("meta must be an object, got %s", n.Kind)
		}
		d.Meta = map[string]any{}
		for _, m := range n.Members {
			switch m.Value.Kind {
			case json5.Object:
				return nil, ref.Child("meta").Child(m.Key).Errorf("meta values must be strings, numbers, booleans, null or arrays of those (no objects)")
			case json5.Array:
				arr := []any{}
				for i, e := range m.Value.Elems {
					if e.Kind == json5.Array || e.Kind == json5.Object {
						return nil, ref.Child("meta").Child(m.Key).Index(i).Errorf("meta array items must be strings, numbers, booleans or null, got %s", e.Kind)
					}
					arr = append(arr, e.Value())
				}
				d.Meta[m.Key] = arr
			default:
				d.Meta[m.Key] = m.Value.Value()
			}
		}
	}
	def, fe := buildDefinition(name, d)
	if fe != nil {
		r := ref
		for _, p := range fe.path {
			r = r.Child(p)
		}
		return nil, r.Errorf("tunable %q: %s", name, fe.msg)
	}
	return newFromDef(def), nil
}

func describeNode(n *json5.Node) string {
	switch n.Kind {
	case json5.Array:
		return fmt.Sprintf("an array of %d elements", len(n.Elems))
	case json5.Number:
		return n.Raw
	}
	return n.Kind.String()
}

func weightsField(ref source.Ref, node *json5.Node, key string) ([]float64, error) {
	n := node.Get(key)
	if n == nil {
		return nil, nil
	}
	if n.Kind != json5.Array || len(n.Elems) == 0 {
		return nil, ref.Child(key).Errorf("%s must be a non-empty array of numbers, got %s", key, describeNode(n))
	}
	out := make([]float64, len(n.Elems))
	for i, e := range n.Elems {
		if e.Kind != json5.Number {
			return nil, ref.Child(key).Index(i).Errorf("weights must be numbers, got %s", e.Kind)
		}
		out[i] = e.Float
	}
	return out, nil
}

func parseDistribution(ref source.Ref, n *json5.Node) (*Distribution, error) {
	if n.Kind != json5.Object {
		return nil, ref.Errorf("distribution must be an object {type, params}, got %s", n.Kind)
	}
	for _, m := range n.Members {
		if m.Key != "type" && m.Key != "params" {
			return nil, keyErr(ref, m.Key, "unknown property %q in distribution (allowed: type, params)", m.Key)
		}
	}
	tn := n.Get("type")
	if tn == nil {
		return nil, ref.Errorf("distribution needs a type (uniform, normal or beta)")
	}
	if tn.Kind != json5.String {
		return nil, ref.Child("type").Errorf("distribution type must be a string, got %s", tn.Kind)
	}
	var need []string
	dist := &Distribution{Type: DistributionType(tn.Str)}
	switch dist.Type {
	case Uniform:
	case Normal:
		need = []string{"mu", "sigma"}
	case Beta:
		need = []string{"alpha", "beta"}
	default:
		return nil, ref.Child("type").Errorf("unknown distribution %q (want uniform, normal or beta)", tn.Str)
	}
	pn := n.Get("params")
	if pn == nil {
		if len(need) > 0 {
			return nil, ref.Errorf("a %s distribution needs params {%s}", dist.Type, strings.Join(need, ", "))
		}
		return dist, nil
	}
	pref := ref.Child("params")
	if pn.Kind != json5.Object {
		return nil, pref.Errorf("distribution params must be an object, got %s", pn.Kind)
	}
	for _, m := range pn.Members {
		if !slices.Contains(need, m.Key) {
			if len(need) == 0 {
				return nil, keyErr(pref, m.Key, "a %s distribution takes no parameters", dist.Type)
			}
			return nil, keyErr(pref, m.Key, "unknown parameter %q of a %s distribution (allowed: %s)", m.Key, dist.Type, strings.Join(need, ", "))
		}
	}
	vals := map[string]float64{}
	for _, k := range need {
		v := pn.Get(k)
		if v == nil {
			return nil, pref.Errorf("a %s distribution needs parameter %q", dist.Type, k)
		}
		if v.Kind != json5.Number {
			return nil, pref.Child(k).Errorf("%s must be a number, got %s", k, v.Kind)
		}
		vals[k] = v.Float
	}
	dist.Mu, dist.Sigma, dist.Alpha, dist.Beta = vals["mu"], vals["sigma"], vals["alpha"], vals["beta"]
	return dist, nil
}

// ParseValues reads a tunable-values document: a flat object
// {"name": string | number | bool}; "$schema" is skipped. Integral numbers
// become int64 (json.Number when they do not fit), others float64.
func ParseValues(ref source.Ref) (map[string]any, error) {
	node := ref.Node()
	if node == nil {
		return nil, ref.Errorf("no tunable-values object here")
	}
	if node.Kind != json5.Object {
		return nil, ref.Errorf("tunable values must be an object {name: value}, got %s", node.Kind)
	}
	var errs errList
	out := map[string]any{}
	for _, m := range node.Members {
		switch {
		case m.Key == "$schema":
			if m.Value.Kind != json5.String {
				errs.add(ref.Child(m.Key).Errorf("$schema must be a string, got %s", m.Value.Kind))
			}
			continue
		case strings.HasPrefix(m.Key, "$"):
			errs.add(keyErr(ref, m.Key, "%q is not a tunable name (names starting with '$' are reserved)", m.Key))
			continue
		case m.Key == "tunable_values":
			errs.add(keyErr(ref, m.Key, "\"tunable_values\" is not allowed here: this file holds the values themselves"))
			continue
		}
		v := m.Value
		switch v.Kind {
		case json5.String:
			out[m.Key] = v.Str
		case json5.Bool:
			out[m.Key] = v.Bool
		case json5.Number:
			switch {
			case v.IsInt && (v.Raw == "" || pyfmt.IsIntLiteral(v.Raw)):
				out[m.Key] = v.Int
			case v.Raw != "" && pyfmt.IsIntLiteral(v.Raw):
				out[m.Key] = json.Number(v.Raw)
			default:
				out[m.Key] = v.Float
			}
		default:
			errs.add(ref.Child(m.Key).Errorf("the value of tunable %q must be a string, number or boolean, got %s", m.Key, v.Kind))
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ApplyValues is Assign for values read from a document (ParseValues):
// errors point at the offending entry of the document ref points at.
func (g *Groups) ApplyValues(values map[string]any, ref source.Ref) error {
	return g.assign(values, func(name string, unknown bool, err error) error {
		if unknown {
			return keyErr(ref, name, "%v", err)
		}
		e := ref.Child(name).Errorf("")
		e.Err = err
		return e
	})
}
