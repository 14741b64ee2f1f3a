package configs

import (
	"math"
	"strconv"
	"strings"
)

// parsePyFloat parses a number the way Python's float() does: surrounding
// whitespace, '_' separators between digits, "inf"/"nan" in any case.
func parsePyFloat(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false
	}
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity":
		if strings.HasPrefix(t, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if strings.Contains(t, "_") {
		if !validUnderscores(t) {
			return 0, false
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	if strings.ContainsAny(t, "xXpP") { // Go accepts hex floats, Python's float() does not
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// parsePyInt parses a decimal integer as Python's int() does.
func parsePyInt(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	if strings.Contains(t, "_") {
		if !validUnderscores(t) {
			return 0, false
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	i, err := strconv.ParseInt(t, 10, 64)
	return i, err == nil
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
