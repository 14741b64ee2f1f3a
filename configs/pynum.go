package configs

import "github.com/benchtune/bench/internal/pyfmt"

// pyParseFloat parses a number the way Python's float() does.
func pyParseFloat(s string) (float64, bool) {
	f, err := pyfmt.ParseFloat(s)
	return f, err == nil
}

// pyParseInt parses a decimal integer as Python's int() does.
func pyParseInt(s string) (int64, bool) {
	i, err := pyfmt.ParseInt(s)
	return i, err == nil
}
