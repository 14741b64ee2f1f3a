package ci

import (
	"math"
	"strconv"
)

func itoa(i int) string { return strconv.Itoa(i) }

// fmtP writes a p-value or level with up to 3 significant digits.
func fmtP(p float64) string { return strconv.FormatFloat(p, 'g', 3, 64) }

// FormatChange writes a relative change as benchstat does: "+5.12%".
func FormatChange(f float64) string {
	if math.IsNaN(f) {
		return "?"
	}
	s := strconv.FormatFloat(f*100, 'f', 2, 64) + "%"
	if f >= 0 {
		s = "+" + s
	}
	return s
}

// FormatValue writes a measurement with 4 significant digits.
func FormatValue(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}
