package armfake

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Template expressions. The fake evaluates the subset of ARM's template
// language that deployment templates such as mlos_bench's shipped ones
// use: string, integer and boolean literals, property access (.x) and
// indexing ([i]), and the functions parameters, variables, concat, format,
// toLower, toUpper, uniqueString, resourceGroup, subscription, resourceId,
// reference, base64, if, equals, empty, string, null, true and false
// (names case-insensitive, as in ARM). An unknown function, an undeclared
// parameter or variable, or a syntax error fails the deployment with
// InvalidTemplate, as ARM does. uniqueString is deterministic, 13
// lowercase characters, but not ARM's hash.

// evalCtx is what a template's expressions see.
type evalCtx struct {
	params       map[string]any // given parameters and evaluated defaults
	declared     map[string]any // the template's parameter declarations
	vars         map[string]any // the template's variables, unevaluated
	sub, rg, loc string
	// lookup returns the resource with that resource id (for reference()).
	lookup func(id string) (map[string]any, bool)
	busy   map[string]bool // parameters and variables being evaluated (cycles)
}

// value evaluates every expression string inside v.
func (c *evalCtx) value(v any) (any, error) {
	switch t := v.(type) {
	case string:
		if strings.HasPrefix(t, "[[") {
			return t[1:], nil // an escaped literal "[..."
		}
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			return c.expr(t[1 : len(t)-1])
		}
		return t, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			y, err := c.value(x)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			y, err := c.value(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return v, nil
}

func (c *evalCtx) expr(src string) (any, error) {
	p := &exprParser{src: src}
	n, err := p.parse()
	if err != nil {
		return nil, fmt.Errorf("the template language expression '%s' is not valid: %v", src, err)
	}
	return c.eval(n)
}

// param returns a parameter's value, evaluating its default on first use.
func (c *evalCtx) param(name string) (any, error) {
	if v, ok := c.params[name]; ok {
		return v, nil
	}
	decl, ok := c.declared[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the template parameter '%s' is not found", name)
	}
	def, has := decl["defaultValue"]
	if !has {
		return nil, fmt.Errorf("the value for the template parameter '%s' is not provided", name)
	}
	if c.busy["p:"+name] {
		return nil, fmt.Errorf("the default value of the template parameter '%s' refers to itself", name)
	}
	c.busy["p:"+name] = true
	defer delete(c.busy, "p:"+name)
	v, err := c.value(def)
	if err != nil {
		return nil, err
	}
	c.params[name] = v
	return v, nil
}

func (c *evalCtx) variable(name string) (any, error) {
	raw, ok := c.vars[name]
	if !ok {
		return nil, fmt.Errorf("the template variable '%s' is not found", name)
	}
	if c.busy["v:"+name] {
		return nil, fmt.Errorf("the template variable '%s' refers to itself", name)
	}
	c.busy["v:"+name] = true
	defer delete(c.busy, "v:"+name)
	return c.value(raw)
}

func (c *evalCtx) resourceGroupID() string {
	return "/subscriptions/" + c.sub + "/resourceGroups/" + c.rg
}

// resourceID is ARM's resourceId(type, name, ...) in the deployment's
// resource group: "a/b/c" with names x, y gives .../providers/a/b/x/c/y.
func (c *evalCtx) resourceID(typ string, names []string) (string, error) {
	parts := strings.Split(typ, "/")
	if len(parts) < 2 || len(parts)-1 != len(names) {
		return "", fmt.Errorf("resourceId: type '%s' needs %d names, got %d", typ, len(parts)-1, len(names))
	}
	id := c.resourceGroupID() + "/providers/" + parts[0]
	for i, n := range names {
		id += "/" + parts[i+1] + "/" + n
	}
	return id, nil
}

type exprNode struct {
	lit    any // a literal (when call == "" and base == nil)
	isLit  bool
	call   string
	args   []*exprNode
	base   *exprNode // property access or index on base
	prop   string
	index  *exprNode
	access bool
}

func (c *evalCtx) eval(n *exprNode) (any, error) {
	switch {
	case n.isLit:
		return n.lit, nil
	case n.access:
		b, err := c.eval(n.base)
		if err != nil {
			return nil, err
		}
		if n.index != nil {
			i, err := c.eval(n.index)
			if err != nil {
				return nil, err
			}
			switch bt := b.(type) {
			case []any:
				k, ok := i.(int64)
				if !ok || k < 0 || int(k) >= len(bt) {
					return nil, fmt.Errorf("the index %v is out of range", i)
				}
				return bt[k], nil
			case map[string]any:
				v, ok := bt[fmt.Sprint(i)]
				if !ok {
					return nil, fmt.Errorf("the property '%v' does not exist", i)
				}
				return v, nil
			}
			return nil, fmt.Errorf("cannot index %T", b)
		}
		m, ok := b.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("the property '%s' cannot be read from %T", n.prop, b)
		}
		for k, v := range m { // ARM's property names are case-insensitive
			if strings.EqualFold(k, n.prop) {
				return v, nil
			}
		}
		return nil, fmt.Errorf("the language expression property '%s' doesn't exist", n.prop)
	}
	name := strings.ToLower(n.call)
	if name == "if" {
		if len(n.args) != 3 {
			return nil, fmt.Errorf("if takes 3 arguments")
		}
		cond, err := c.eval(n.args[0])
		if err != nil {
			return nil, err
		}
		b, ok := cond.(bool)
		if !ok {
			return nil, fmt.Errorf("the condition of if is %T, not a boolean", cond)
		}
		if b {
			return c.eval(n.args[1])
		}
		return c.eval(n.args[2])
	}
	args := make([]any, len(n.args))
	for i, a := range n.args {
		v, err := c.eval(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	str := func(i int) (string, error) {
		s, ok := args[i].(string)
		if !ok {
			return "", fmt.Errorf("%s: argument %d is %T, not a string", n.call, i+1, args[i])
		}
		return s, nil
	}
	nargs := func(min, max int) error {
		if len(args) < min || (max >= 0 && len(args) > max) {
			return fmt.Errorf("%s: wrong number of arguments (%d)", n.call, len(args))
		}
		return nil
	}
	switch name {
	case "parameters", "variables":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		if name == "parameters" {
			return c.param(s)
		}
		return c.variable(s)
	case "concat":
		if err := nargs(1, -1); err != nil {
			return nil, err
		}
		if _, ok := args[0].([]any); ok {
			var out []any
			for i, a := range args {
				l, ok := a.([]any)
				if !ok {
					return nil, fmt.Errorf("concat: argument %d is not an array", i+1)
				}
				out = append(out, l...)
			}
			return out, nil
		}
		var b strings.Builder
		for _, a := range args {
			b.WriteString(armString(a))
		}
		return b.String(), nil
	case "format":
		if err := nargs(1, -1); err != nil {
			return nil, err
		}
		f, err := str(0)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		for i := 0; i < len(f); i++ {
			if f[i] != '{' {
				b.WriteByte(f[i])
				continue
			}
			j := strings.IndexByte(f[i:], '}')
			k, err := strconv.Atoi(f[i+1 : i+max(j, 1)])
			if j < 0 || err != nil || k < 0 || k+1 >= len(args) {
				return nil, fmt.Errorf("format: bad placeholder in '%s'", f)
			}
			b.WriteString(armString(args[k+1]))
			i += j
		}
		return b.String(), nil
	case "tolower", "toupper":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		if name == "tolower" {
			return strings.ToLower(s), nil
		}
		return strings.ToUpper(s), nil
	case "uniquestring":
		if err := nargs(1, -1); err != nil {
			return nil, err
		}
		parts := make([]string, len(args))
		for i := range args {
			s, err := str(i)
			if err != nil {
				return nil, err
			}
			parts[i] = s
		}
		sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
		return strings.ToLower(base32.StdEncoding.EncodeToString(sum[:]))[:13], nil
	case "resourcegroup":
		if err := nargs(0, 0); err != nil {
			return nil, err
		}
		return map[string]any{"id": c.resourceGroupID(), "name": c.rg, "location": c.loc, "type": "Microsoft.Resources/resourceGroups"}, nil
	case "subscription":
		if err := nargs(0, 0); err != nil {
			return nil, err
		}
		return map[string]any{"id": "/subscriptions/" + c.sub, "subscriptionId": c.sub}, nil
	case "resourceid":
		if err := nargs(2, -1); err != nil {
			return nil, err
		}
		strs := make([]string, len(args))
		for i := range args {
			s, err := str(i)
			if err != nil {
				return nil, err
			}
			strs[i] = s
		}
		return c.resourceID(strs[0], strs[1:])
	case "reference":
		if err := nargs(1, 3); err != nil {
			return nil, err
		}
		id, err := str(0)
		if err != nil {
			return nil, err
		}
		res, ok := c.lookup(id)
		if !ok {
			return nil, fmt.Errorf("the resource '%s' is not defined in the template", id)
		}
		props, _ := res["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		return props, nil
	case "base64":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		s, err := str(0)
		if err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(s)), nil
	case "equals":
		if err := nargs(2, 2); err != nil {
			return nil, err
		}
		return reflect.DeepEqual(args[0], args[1]), nil
	case "empty":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		switch t := args[0].(type) {
		case nil:
			return true, nil
		case string:
			return t == "", nil
		case []any:
			return len(t) == 0, nil
		case map[string]any:
			return len(t) == 0, nil
		}
		return false, nil
	case "string":
		if err := nargs(1, 1); err != nil {
			return nil, err
		}
		return armString(args[0]), nil
	case "null":
		return nil, nargs(0, 0)
	case "true", "false":
		return name == "true", nargs(0, 0)
	}
	return nil, fmt.Errorf("the template function '%s' is not valid (the fake does not implement it)", n.call)
}

// armString is a value as concat and format write it.
func armString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(t)
	}
	return fmt.Sprint(v)
}

type exprParser struct {
	src string
	pos int
}

func (p *exprParser) parse() (*exprNode, error) {
	n, err := p.term()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("unexpected %q at %d", p.src[p.pos:], p.pos+1)
	}
	return n, nil
}

func (p *exprParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n' || p.src[p.pos] == '\r') {
		p.pos++
	}
}

func (p *exprParser) term() (*exprNode, error) {
	n, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		p.space()
		if p.pos >= len(p.src) {
			return n, nil
		}
		switch p.src[p.pos] {
		case '.':
			p.pos++
			id := p.ident()
			if id == "" {
				return nil, fmt.Errorf("a property name is expected at %d", p.pos+1)
			}
			n = &exprNode{access: true, base: n, prop: id}
		case '[':
			p.pos++
			i, err := p.term()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.pos >= len(p.src) || p.src[p.pos] != ']' {
				return nil, fmt.Errorf("']' is expected at %d", p.pos+1)
			}
			p.pos++
			n = &exprNode{access: true, base: n, index: i}
		default:
			return n, nil
		}
	}
}

func (p *exprParser) ident() string {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' && p.pos > start {
			p.pos++
			continue
		}
		break
	}
	return p.src[start:p.pos]
}

func (p *exprParser) primary() (*exprNode, error) {
	p.space()
	if p.pos >= len(p.src) {
		return nil, fmt.Errorf("an expression is expected")
	}
	c := p.src[p.pos]
	switch {
	case c == '\'':
		var b strings.Builder
		for p.pos++; ; p.pos++ {
			if p.pos >= len(p.src) {
				return nil, fmt.Errorf("unterminated string")
			}
			if p.src[p.pos] == '\'' {
				if p.pos+1 < len(p.src) && p.src[p.pos+1] == '\'' {
					b.WriteByte('\'')
					p.pos++
					continue
				}
				p.pos++
				return &exprNode{isLit: true, lit: b.String()}, nil
			}
			b.WriteByte(p.src[p.pos])
		}
	case c == '-' || c >= '0' && c <= '9':
		start := p.pos
		p.pos++
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
		v, err := strconv.ParseInt(p.src[start:p.pos], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", p.src[start:p.pos])
		}
		return &exprNode{isLit: true, lit: v}, nil
	}
	id := p.ident()
	if id == "" {
		return nil, fmt.Errorf("unexpected %q at %d", p.src[p.pos:], p.pos+1)
	}
	p.space()
	if p.pos >= len(p.src) || p.src[p.pos] != '(' {
		return nil, fmt.Errorf("'(' is expected after '%s'", id)
	}
	p.pos++
	n := &exprNode{call: id}
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == ')' {
		p.pos++
		return n, nil
	}
	for {
		a, err := p.term()
		if err != nil {
			return nil, err
		}
		n.args = append(n.args, a)
		p.space()
		if p.pos >= len(p.src) {
			return nil, fmt.Errorf("')' is expected")
		}
		if p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.src[p.pos] == ')' {
			p.pos++
			return n, nil
		}
		return nil, fmt.Errorf("unexpected %q at %d", p.src[p.pos:], p.pos+1)
	}
}
