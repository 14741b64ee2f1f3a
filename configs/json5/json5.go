// Package json5 parses JSON5 (https://spec.json5.org) into a tree of nodes
// that remember where each value and key came from, so that every later error
// (schema violation, bad tunable, missing include) can name the line, column
// and JSON path of the offending value.
//
// It accepts everything Python's json5 accepts for configs: comments,
// trailing commas, unquoted keys, single-quoted strings, hexadecimal numbers,
// leading/trailing decimal points, explicit '+', Infinity and NaN, escaped
// line breaks in strings and the extra JSON5 whitespace characters.
package json5

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Kind is the JSON type of a node.
type Kind int

// Node kinds.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Bool:
		return "boolean"
	case Number:
		return "number"
	case String:
		return "string"
	case Array:
		return "array"
	case Object:
		return "object"
	}
	return "unknown"
}

// Pos is a position in the source: byte offset, 1-based line and 1-based
// column counted in characters (runes).
type Pos struct {
	Offset int
	Line   int
	Col    int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Member is one key/value pair of an object, in source order.
type Member struct {
	Key    string
	KeyPos Pos
	Value  *Node
}

// Node is one parsed JSON5 value.
type Node struct {
	Kind Kind
	Pos  Pos // where the value starts

	Bool bool
	// Numbers: Int is set and IsInt true for integral literals that fit in
	// an int64 (decimal without fraction/exponent, or hexadecimal); Float
	// always holds the value as a float64.
	IsInt bool
	Int   int64
	Float float64
	Raw   string // number literal as written
	Str   string

	Elems   []*Node
	Members []Member
}

// SyntaxError is a parse error with its position.
type SyntaxError struct {
	Pos Pos
	Msg string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Pos.Line, e.Pos.Col, e.Msg) }

// MaxDepth bounds nesting so that hostile input cannot exhaust the stack.
const MaxDepth = 1000

// Parse parses one JSON5 value (surrounded by optional whitespace and
// comments). Duplicate object keys are allowed as in Python's json5: the
// last value wins and keeps the first key's place.
func Parse(data []byte) (*Node, error) {
	return (&parser{src: data, pos: Pos{Line: 1, Col: 1}}).parse()
}

// Duplicate is a key given more than once in one object.
type Duplicate struct {
	// Path is the object's path from the root (keys and array indices).
	Path []string
	Key  string
	// First is where the key first appears; Again where it appears once
	// more (the last occurrence's value wins).
	First, Again Pos
}

// ParseDuplicates is Parse that also reports every repeated key: one
// Duplicate per later occurrence, in source order (bench validate warns
// about them; loading configs accepts them, as mlos_bench does).
func ParseDuplicates(data []byte) (*Node, []Duplicate, error) {
	p := &parser{src: data, pos: Pos{Line: 1, Col: 1}, track: true}
	n, err := p.parse()
	if err != nil {
		return nil, nil, err
	}
	return n, p.dups, nil
}

func (p *parser) parse() (*Node, error) {
	data := p.src
	if len(data) >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF {
		p.pos.Offset = 3
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if p.eof() {
		return nil, p.errf("empty document: expected a JSON5 value")
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.skipSpace(); err != nil {
		return nil, err
	}
	if !p.eof() {
		return nil, p.errf("unexpected %s after the top-level value", p.describe())
	}
	return n, nil
}

type parser struct {
	src []byte
	pos Pos
	// With track set, the path of the value being parsed is kept and
	// repeated keys are collected in dups.
	track bool
	path  []string
	dups  []Duplicate
}

func (p *parser) eof() bool { return p.pos.Offset >= len(p.src) }

func (p *parser) errf(format string, args ...any) error {
	return &SyntaxError{Pos: p.pos, Msg: fmt.Sprintf(format, args...)}
}

// peek returns the rune at the current offset and its width (0 at EOF).
func (p *parser) peek() (rune, int) {
	if p.eof() {
		return 0, 0
	}
	b := p.src[p.pos.Offset]
	if b < 0x80 {
		return rune(b), 1
	}
	return decodeRune(p.src[p.pos.Offset:])
}

// advance moves past one rune, tracking line and column. CRLF counts as one
// line break; CR, LF, U+2028 and U+2029 each end a line.
func (p *parser) advance() {
	r, w := p.peek()
	if w == 0 {
		return
	}
	p.pos.Offset += w
	switch r {
	case '\n', 0x2028, 0x2029:
		p.pos.Line++
		p.pos.Col = 1
	case '\r':
		if !p.eof() && p.src[p.pos.Offset] == '\n' {
			p.pos.Offset++
		}
		p.pos.Line++
		p.pos.Col = 1
	default:
		p.pos.Col++
	}
}

func (p *parser) describe() string {
	r, w := p.peek()
	if w == 0 {
		return "end of input"
	}
	if r == utf8RuneError && w == 1 {
		return fmt.Sprintf("invalid UTF-8 byte 0x%02x", p.src[p.pos.Offset])
	}
	return fmt.Sprintf("character %q", r)
}

func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x2028, 0x2029, 0xFEFF:
		return true
	}
	return isUnicodeZs(r)
}

func (p *parser) skipSpace() error {
	for !p.eof() {
		r, _ := p.peek()
		if isSpace(r) {
			p.advance()
			continue
		}
		if r != '/' || p.pos.Offset+1 >= len(p.src) {
			return nil
		}
		switch p.src[p.pos.Offset+1] {
		case '/':
			for !p.eof() {
				r, _ := p.peek()
				if r == '\n' || r == '\r' || r == 0x2028 || r == 0x2029 {
					break
				}
				p.advance()
			}
		case '*':
			start := p.pos
			p.advance()
			p.advance()
			closed := false
			for !p.eof() {
				if p.src[p.pos.Offset] == '*' && p.pos.Offset+1 < len(p.src) && p.src[p.pos.Offset+1] == '/' {
					p.advance()
					p.advance()
					closed = true
					break
				}
				p.advance()
			}
			if !closed {
				return &SyntaxError{Pos: start, Msg: "unterminated /* comment"}
			}
		default:
			return nil
		}
	}
	return nil
}

func (p *parser) value(depth int) (*Node, error) {
	if depth > MaxDepth {
		return nil, p.errf("nesting deeper than %d levels", MaxDepth)
	}
	r, _ := p.peek()
	start := p.pos
	switch {
	case r == '{':
		return p.object(depth)
	case r == '[':
		return p.array(depth)
	case r == '"' || r == '\'':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &Node{Kind: String, Pos: start, Str: s}, nil
	case r == '-' || r == '+' || r == '.' || (r >= '0' && r <= '9'):
		return p.number()
	case isIDStart(r) || r == '\\':
		word, err := p.identifier()
		if err != nil {
			return nil, err
		}
		switch word {
		case "null":
			return &Node{Kind: Null, Pos: start}, nil
		case "true":
			return &Node{Kind: Bool, Pos: start, Bool: true}, nil
		case "false":
			return &Node{Kind: Bool, Pos: start}, nil
		case "Infinity":
			return &Node{Kind: Number, Pos: start, Float: math.Inf(1), Raw: word}, nil
		case "NaN":
			return &Node{Kind: Number, Pos: start, Float: math.NaN(), Raw: word}, nil
		}
		return nil, &SyntaxError{Pos: start, Msg: fmt.Sprintf("unexpected word %q: expected a value (strings need quotes)", word)}
	case r == 0 && p.eof():
		return nil, p.errf("unexpected end of input: expected a value")
	}
	return nil, p.errf("unexpected %s: expected a value", p.describe())
}

func (p *parser) object(depth int) (*Node, error) {
	n := &Node{Kind: Object, Pos: p.pos}
	p.advance() // {
	index := map[string]int{}
	for {
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		r, _ := p.peek()
		if r == '}' {
			p.advance()
			return n, nil
		}
		if p.eof() {
			return nil, &SyntaxError{Pos: n.Pos, Msg: "unterminated object: missing '}'"}
		}
		keyPos := p.pos
		var key string
		var err error
		switch {
		case r == '"' || r == '\'':
			key, err = p.str()
		case isIDStart(r) || r == '\\':
			key, err = p.identifier()
		default:
			return nil, p.errf("unexpected %s: expected a property name or '}'", p.describe())
		}
		if err != nil {
			return nil, err
		}
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if r, _ := p.peek(); r != ':' {
			return nil, p.errf("unexpected %s after property name %q: expected ':'", p.describe(), key)
		}
		p.advance()
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if p.track {
			p.path = append(p.path, key)
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.track {
			p.path = p.path[:len(p.path)-1]
		}
		if i, dup := index[key]; dup {
			n.Members[i].Value = v
			if p.track {
				p.dups = append(p.dups, Duplicate{Path: slices.Clone(p.path), Key: key, First: n.Members[i].KeyPos, Again: keyPos})
			}
		} else {
			index[key] = len(n.Members)
			n.Members = append(n.Members, Member{Key: key, KeyPos: keyPos, Value: v})
		}
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		switch r, _ := p.peek(); r {
		case ',':
			p.advance()
		case '}':
			p.advance()
			return n, nil
		default:
			if p.eof() {
				return nil, &SyntaxError{Pos: n.Pos, Msg: "unterminated object: missing '}'"}
			}
			return nil, p.errf("unexpected %s after object member %q: expected ',' or '}'", p.describe(), key)
		}
	}
}

func (p *parser) array(depth int) (*Node, error) {
	n := &Node{Kind: Array, Pos: p.pos}
	p.advance() // [
	for {
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		if r, _ := p.peek(); r == ']' {
			p.advance()
			return n, nil
		}
		if p.eof() {
			return nil, &SyntaxError{Pos: n.Pos, Msg: "unterminated array: missing ']'"}
		}
		if p.track {
			p.path = append(p.path, strconv.Itoa(len(n.Elems)))
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.track {
			p.path = p.path[:len(p.path)-1]
		}
		n.Elems = append(n.Elems, v)
		if err := p.skipSpace(); err != nil {
			return nil, err
		}
		switch r, _ := p.peek(); r {
		case ',':
			p.advance()
		case ']':
			p.advance()
			return n, nil
		default:
			if p.eof() {
				return nil, &SyntaxError{Pos: n.Pos, Msg: "unterminated array: missing ']'"}
			}
			return nil, p.errf("unexpected %s after array element: expected ',' or ']'", p.describe())
		}
	}
}

func hexVal(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return int(b-'A') + 10
	}
	return -1
}

// hexDigits reads exactly n hex digits.
func (p *parser) hexDigits(n int) (rune, error) {
	var v rune
	for i := 0; i < n; i++ {
		if p.eof() {
			return 0, p.errf("unexpected end of input in escape sequence")
		}
		d := hexVal(p.src[p.pos.Offset])
		if d < 0 {
			return 0, p.errf("invalid hexadecimal digit %s in escape sequence", p.describe())
		}
		v = v*16 + rune(d)
		p.advance()
	}
	return v, nil
}

// unicodeEscape reads the XXXX of \uXXXX (the \u already consumed),
// combining UTF-16 surrogate pairs.
func (p *parser) unicodeEscape() (rune, error) {
	r, err := p.hexDigits(4)
	if err != nil {
		return 0, err
	}
	if r >= 0xD800 && r < 0xDC00 && p.pos.Offset+1 < len(p.src) && p.src[p.pos.Offset] == '\\' && p.src[p.pos.Offset+1] == 'u' {
		save := p.pos
		p.advance()
		p.advance()
		lo, err := p.hexDigits(4)
		if err == nil && lo >= 0xDC00 && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, nil
		}
		p.pos = save
	}
	if r >= 0xD800 && r < 0xE000 {
		return utf8RuneError, nil
	}
	return r, nil
}

func (p *parser) str() (string, error) {
	start := p.pos
	quote := p.src[p.pos.Offset]
	p.advance()
	var b strings.Builder
	for {
		if p.eof() {
			return "", &SyntaxError{Pos: start, Msg: "unterminated string"}
		}
		c := p.src[p.pos.Offset]
		if c == quote {
			p.advance()
			return b.String(), nil
		}
		switch c {
		case '\n', '\r':
			return "", p.errf("line break inside a string (escape it with \\)")
		case '\\':
			p.advance()
			if p.eof() {
				return "", &SyntaxError{Pos: start, Msg: "unterminated string"}
			}
			e, w := p.peek()
			switch e {
			case '\'', '"', '\\', '/':
				b.WriteRune(e)
				p.advance()
			case 'b':
				b.WriteByte('\b')
				p.advance()
			case 'f':
				b.WriteByte('\f')
				p.advance()
			case 'n':
				b.WriteByte('\n')
				p.advance()
			case 'r':
				b.WriteByte('\r')
				p.advance()
			case 't':
				b.WriteByte('\t')
				p.advance()
			case 'v':
				b.WriteByte('\v')
				p.advance()
			case '0':
				p.advance()
				if !p.eof() && p.src[p.pos.Offset] >= '0' && p.src[p.pos.Offset] <= '9' {
					return "", p.errf("octal escapes are not allowed in JSON5 strings")
				}
				b.WriteByte(0)
			case 'x':
				p.advance()
				r, err := p.hexDigits(2)
				if err != nil {
					return "", err
				}
				b.WriteRune(r)
			case 'u':
				p.advance()
				r, err := p.unicodeEscape()
				if err != nil {
					return "", err
				}
				b.WriteRune(r)
			case '\n', '\r', 0x2028, 0x2029:
				p.advance() // line continuation: nothing is added
			default:
				if e >= '1' && e <= '9' {
					return "", p.errf("invalid escape \\%c in string", e)
				}
				if e == utf8RuneError && w == 1 {
					return "", p.errf("invalid UTF-8 in string")
				}
				b.WriteRune(e)
				p.advance()
			}
		default:
			r, w := p.peek()
			if r == utf8RuneError && w == 1 {
				return "", p.errf("invalid UTF-8 in string")
			}
			b.WriteString(string(p.src[p.pos.Offset : p.pos.Offset+w]))
			p.advance()
		}
	}
}

// identifier reads an ECMAScript IdentifierName (with \uXXXX escapes).
func (p *parser) identifier() (string, error) {
	var b strings.Builder
	first := true
	for !p.eof() {
		r, _ := p.peek()
		if r == '\\' {
			p.advance()
			if r, _ := p.peek(); r != 'u' {
				return "", p.errf("invalid escape in property name: only \\u is allowed")
			}
			p.advance()
			u, err := p.unicodeEscape()
			if err != nil {
				return "", err
			}
			if (first && !isIDStart(u)) || (!first && !isIDPart(u)) {
				return "", p.errf("escaped character %q cannot be part of a property name", u)
			}
			b.WriteRune(u)
		} else if (first && isIDStart(r)) || (!first && isIDPart(r)) {
			b.WriteRune(r)
			p.advance()
		} else {
			break
		}
		first = false
	}
	if b.Len() == 0 {
		return "", p.errf("unexpected %s: expected a property name", p.describe())
	}
	return b.String(), nil
}

func (p *parser) number() (*Node, error) {
	start := p.pos
	n := &Node{Kind: Number, Pos: start}
	begin := p.pos.Offset
	neg := false
	if c := p.src[p.pos.Offset]; c == '+' || c == '-' {
		neg = c == '-'
		p.advance()
	}
	if p.eof() {
		return nil, p.errf("unexpected end of input in number")
	}
	c := p.src[p.pos.Offset]
	if c == 'I' || c == 'N' {
		word, err := p.identifier()
		if err != nil {
			return nil, err
		}
		switch word {
		case "Infinity":
			n.Float = math.Inf(1)
			if neg {
				n.Float = math.Inf(-1)
			}
		case "NaN":
			n.Float = math.NaN()
		default:
			return nil, &SyntaxError{Pos: start, Msg: fmt.Sprintf("invalid number %q", string(p.src[begin:p.pos.Offset]))}
		}
		n.Raw = string(p.src[begin:p.pos.Offset])
		return n, nil
	}
	if c == '0' && p.pos.Offset+1 < len(p.src) && (p.src[p.pos.Offset+1] == 'x' || p.src[p.pos.Offset+1] == 'X') {
		p.advance()
		p.advance()
		digits := p.pos.Offset
		for !p.eof() && hexVal(p.src[p.pos.Offset]) >= 0 {
			p.advance()
		}
		if digits == p.pos.Offset {
			return nil, p.errf("hexadecimal number without digits")
		}
		if err := p.numberEnd(); err != nil {
			return nil, err
		}
		n.Raw = string(p.src[begin:p.pos.Offset])
		u, err := strconv.ParseUint(string(p.src[digits:p.pos.Offset]), 16, 64)
		f := float64(u)
		if err != nil { // too big for 64 bits: keep an approximate float
			f = 0
			for _, d := range p.src[digits:p.pos.Offset] {
				f = f*16 + float64(hexVal(d))
			}
		}
		if neg {
			f = -f
		}
		n.Float = f
		if err == nil && u <= math.MaxInt64 {
			n.IsInt, n.Int = true, int64(u)
			if neg {
				n.Int = -n.Int
			}
		}
		return n, nil
	}
	intDigits, fracDigits := 0, 0
	isFloat := false
	if c == '0' {
		p.advance()
		intDigits = 1
		if !p.eof() && p.src[p.pos.Offset] >= '0' && p.src[p.pos.Offset] <= '9' {
			return nil, p.errf("numbers cannot have leading zeros")
		}
	} else {
		for !p.eof() && p.src[p.pos.Offset] >= '0' && p.src[p.pos.Offset] <= '9' {
			p.advance()
			intDigits++
		}
	}
	if !p.eof() && p.src[p.pos.Offset] == '.' {
		isFloat = true
		p.advance()
		for !p.eof() && p.src[p.pos.Offset] >= '0' && p.src[p.pos.Offset] <= '9' {
			p.advance()
			fracDigits++
		}
	}
	if intDigits == 0 && fracDigits == 0 {
		return nil, &SyntaxError{Pos: start, Msg: fmt.Sprintf("invalid number %q", string(p.src[begin:p.pos.Offset]))}
	}
	if !p.eof() && (p.src[p.pos.Offset] == 'e' || p.src[p.pos.Offset] == 'E') {
		isFloat = true
		p.advance()
		if !p.eof() && (p.src[p.pos.Offset] == '+' || p.src[p.pos.Offset] == '-') {
			p.advance()
		}
		expDigits := 0
		for !p.eof() && p.src[p.pos.Offset] >= '0' && p.src[p.pos.Offset] <= '9' {
			p.advance()
			expDigits++
		}
		if expDigits == 0 {
			return nil, p.errf("number exponent without digits")
		}
	}
	if err := p.numberEnd(); err != nil {
		return nil, err
	}
	n.Raw = string(p.src[begin:p.pos.Offset])
	text := strings.TrimPrefix(n.Raw, "+")
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !isRangeErr(err) {
		return nil, &SyntaxError{Pos: start, Msg: fmt.Sprintf("invalid number %q", n.Raw)}
	}
	n.Float = f
	if !isFloat {
		if i, err := strconv.ParseInt(text, 10, 64); err == nil {
			n.IsInt, n.Int = true, i
		}
	}
	return n, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// numberEnd rejects a number immediately followed by an identifier
// character (as in 12abc).
func (p *parser) numberEnd() error {
	if r, w := p.peek(); w > 0 && (isIDPart(r) || r == '.') {
		return p.errf("unexpected %s in number", p.describe())
	}
	return nil
}

// Value converts the node into plain Go values: map[string]any, []any,
// string, bool, nil, int64 (integral literals) or float64.
func (n *Node) Value() any {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case Bool:
		return n.Bool
	case Number:
		if n.IsInt {
			return n.Int
		}
		return n.Float
	case String:
		return n.Str
	case Array:
		out := make([]any, len(n.Elems))
		for i, e := range n.Elems {
			out[i] = e.Value()
		}
		return out
	case Object:
		out := make(map[string]any, len(n.Members))
		for _, m := range n.Members {
			out[m.Key] = m.Value.Value()
		}
		return out
	}
	return nil
}

// Get returns the value of an object member, or nil.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != Object {
		return nil
	}
	for i := range n.Members {
		if n.Members[i].Key == key {
			return n.Members[i].Value
		}
	}
	return nil
}

// Member returns the member with the given key, or nil.
func (n *Node) Member(key string) *Member {
	if n == nil || n.Kind != Object {
		return nil
	}
	for i := range n.Members {
		if n.Members[i].Key == key {
			return &n.Members[i]
		}
	}
	return nil
}

// Keys returns the object's keys in source order.
func (n *Node) Keys() []string {
	if n == nil || n.Kind != Object {
		return nil
	}
	keys := make([]string, len(n.Members))
	for i, m := range n.Members {
		keys[i] = m.Key
	}
	return keys
}

// Locate follows a path of object keys and array indexes (as decimal
// strings) and returns the deepest node reached and whether the whole path
// resolved. When the last step names an object key, keyPos is that key's
// position (useful for "unknown property" errors).
func (n *Node) Locate(path []string) (node *Node, keyPos *Pos, complete bool) {
	cur := n
	for _, tok := range path {
		switch cur.Kind {
		case Object:
			m := cur.Member(tok)
			if m == nil {
				return cur, nil, false
			}
			kp := m.KeyPos
			keyPos = &kp
			cur = m.Value
		case Array:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(cur.Elems) {
				return cur, nil, false
			}
			keyPos = nil
			cur = cur.Elems[i]
		default:
			return cur, nil, false
		}
	}
	return cur, keyPos, true
}

// FromValue builds a node tree (without positions) from plain Go values,
// for configs built in code. Map keys are sorted for determinism.
func FromValue(v any) *Node {
	switch x := v.(type) {
	case nil:
		return &Node{Kind: Null}
	case bool:
		return &Node{Kind: Bool, Bool: x}
	case int:
		return &Node{Kind: Number, IsInt: true, Int: int64(x), Float: float64(x), Raw: strconv.Itoa(x)}
	case int64:
		return &Node{Kind: Number, IsInt: true, Int: x, Float: float64(x), Raw: strconv.FormatInt(x, 10)}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			// keep the float kind: a literal 1.0 stays a float
			return &Node{Kind: Number, Float: x, Raw: strconv.FormatFloat(x, 'f', 1, 64)}
		}
		return &Node{Kind: Number, Float: x, Raw: strconv.FormatFloat(x, 'g', -1, 64)}
	case string:
		return &Node{Kind: String, Str: x}
	case []any:
		n := &Node{Kind: Array}
		for _, e := range x {
			n.Elems = append(n.Elems, FromValue(e))
		}
		return n
	case []string:
		n := &Node{Kind: Array}
		for _, e := range x {
			n.Elems = append(n.Elems, FromValue(e))
		}
		return n
	case map[string]any:
		n := &Node{Kind: Object}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.Members = append(n.Members, Member{Key: k, Value: FromValue(x[k])})
		}
		return n
	}
	return &Node{Kind: String, Str: fmt.Sprint(v)}
}
