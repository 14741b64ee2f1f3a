// Package pyfmt reproduces the pieces of Python's text conversions that
// mlos_bench's behaviour depends on (str()/repr() of numbers, booleans and
// strings; int()/float() parsing), so that templated strings and the config
// hash read the same as under mlos_bench.
package pyfmt

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file reproduces the few pieces of Python's text conversions that
// mlos_bench's canonical tunable string (and so the config hash) depends on:
// str()/repr() of int, float, bool and str values, and int()/float() parsing
// of strings.

// FloatRepr formats f as Python's repr(float) does: the shortest text that
// round-trips, in positional notation when the decimal exponent is in
// [-4, 16) (always with a fractional part, "100.0"), otherwise in scientific
// notation with a signed, at least two-digit exponent ("1e-05", "1e+16").
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// Shortest round-trip digits: "-d.ddde±XX".
	s := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	epos := strings.IndexByte(s, 'e')
	mant, expText := s[:epos], s[epos+1:]
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		var b strings.Builder
		b.WriteString(sign)
		b.WriteByte(digits[0])
		if len(digits) > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if exp < 0 {
			b.WriteByte('-')
			exp = -exp
		} else {
			b.WriteByte('+')
		}
		if exp < 10 {
			b.WriteByte('0')
		}
		b.WriteString(strconv.Itoa(exp))
		return b.String()
	}
	// Positional: the decimal point goes after digit number exp+1.
	point := exp + 1
	var intPart, fracPart string
	switch {
	case point <= 0:
		intPart, fracPart = "0", strings.Repeat("0", -point)+digits
	case point >= len(digits):
		intPart, fracPart = digits+strings.Repeat("0", point-len(digits)), "0"
	default:
		intPart, fracPart = digits[:point], digits[point:]
	}
	return sign + intPart + "." + fracPart
}

// Bool is Python's str(bool).
func Bool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// StrRepr is Python's repr(str): single quotes unless the text contains a
// single quote and no double quote; backslash escapes for the quote,
// backslash, \t \n \r and non-printable characters.
func StrRepr(s string) string {
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteRune(quote)
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		i += w
		switch {
		case r == quote || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case unicode.IsPrint(r): // same classes as str.isprintable()
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteRune(quote)
	return b.String()
}

// ListRepr is Python's repr(list[str]).
func ListRepr(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = StrRepr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// IsIntLiteral tells whether Python's json5 module turns the number
// literal raw into an int (as opposed to a float): hexadecimal literals and
// decimal literals without a fraction or exponent.
func IsIntLiteral(raw string) bool {
	t := strings.TrimLeft(raw, "+-")
	if t == "" || strings.HasPrefix(t, "Infinity") || strings.HasPrefix(t, "NaN") {
		return false
	}
	if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		return true
	}
	return !strings.ContainsAny(t, ".eE")
}

// IntLiteralText returns the decimal text Python prints for an integer
// literal (decimal or hexadecimal, any size).
func IntLiteralText(raw string) (string, bool) {
	t := raw
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	base := 10
	if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		base, t = 16, t[2:]
	}
	var z big.Int
	if _, ok := z.SetString(t, base); !ok {
		return "", false
	}
	if neg {
		z.Neg(&z)
	}
	return z.String(), true
}

// ParseInt parses text as Python's int(str) does (decimal, surrounding
// whitespace, '_' between digits); the result must fit in an int64.
func ParseInt(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.Contains(t, "_") {
		if !validUnderscores(t) {
			return 0, fmt.Errorf("invalid literal for int(): %q", s)
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	i, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("integer %q does not fit in 64 bits", s)
		}
		return 0, fmt.Errorf("invalid literal for int(): %q", s)
	}
	return i, nil
}

// ParseFloat parses text as Python's float(str) does: surrounding
// whitespace, '_' between digits, "inf"/"infinity"/"nan" in any case; no
// hexadecimal.
func ParseFloat(s string) (float64, error) {
	t := strings.TrimSpace(s)
	bad := fmt.Errorf("could not convert string to float: %q", s)
	if t == "" {
		return 0, bad
	}
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	case "nan":
		return math.NaN(), nil
	}
	if strings.Contains(t, "_") {
		if !validUnderscores(t) {
			return 0, bad
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	if strings.ContainsAny(t, "xXpP") {
		return 0, bad
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil
		}
		return 0, bad
	}
	return f, nil
}

func validUnderscores(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] != '_' {
			continue
		}
		if i == 0 || i == len(t)-1 || !isDigit(t[i-1]) || !isDigit(t[i+1]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// DictRepr is Python's repr(dict) of keys (strings, in the given order)
// and values already written as Python writes them.
func DictRepr(keys, values []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = StrRepr(k) + ": " + values[i]
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// MetricRepr writes a result value as mlos_bench has it after reading it
// back from storage and parsing it (try_parse_val): an integer string as an
// int, another number as a float, other text as a str; nil is None.
func MetricRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		return Bool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return FloatRepr(x)
	case float32:
		return FloatRepr(float64(x))
	case string:
		if n, err := ParseInt(x); err == nil {
			return strconv.FormatInt(n, 10)
		}
		if f, err := ParseFloat(x); err == nil {
			return FloatRepr(f)
		}
		return StrRepr(x)
	default:
		return StrRepr(fmt.Sprint(x))
	}
}
