// The one parser of the -mf method names' suffixes (gp-fid's
// hyperband_mf_model.go, mfacq's mf_acq.go, dyn's mf_dyn.go): a base name
// followed by "-part" suffixes, each allowed at most once and in the
// order the method lists them.

package main

import (
	"math"
	"strconv"
	"strings"
)

// mfSuffix is one suffix a method name may take.
type mfSuffix struct {
	name string
	// flag, when set, is the suffix's switch: the part is name alone.
	flag *bool
	// value, else, reads what follows name in the part (false: not a
	// valid value, the method name is refused).
	value func(v string) bool
}

// matches reports whether part is this suffix.
func (s mfSuffix) matches(part string) bool {
	if s.flag != nil {
		return part == s.name
	}
	return strings.HasPrefix(part, s.name)
}

// mfFlag is the suffix -name, which sets *dst.
func mfFlag(name string, dst *bool) mfSuffix { return mfSuffix{name: name, flag: dst} }

// mfMin is the suffix -minN: *dst = N, a number > 0.
func mfMin(dst *float64) mfSuffix {
	return mfSuffix{name: "min", value: func(v string) bool {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return false
		}
		*dst = f
		return true
	}}
}

// mfNoMax is mfInt's hi for a suffix with no upper bound.
const mfNoMax = math.MaxInt

// mfInt is the suffix -nameN for a whole N in [lo, hi], which set
// records.
func mfInt(name string, lo, hi int, set func(n int)) mfSuffix {
	return mfSuffix{name: name, value: func(v string) bool {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return false
		}
		set(n)
		return true
	}}
}

// mfPercent is the suffix -nameN for a whole N in [1, hi]: *dst = N/100.
func mfPercent(name string, hi int, dst *float64) mfSuffix {
	return mfInt(name, 1, hi, func(n int) { *dst = float64(n) / 100 })
}

// parseMFSuffixes reads rest, what follows a method's base name: "" or
// "-part-part...", each part one of sufs, at most once and in the order
// of sufs.
func parseMFSuffixes(rest string, sufs ...mfSuffix) bool {
	if rest == "" {
		return true
	}
	if !strings.HasPrefix(rest, "-") {
		return false
	}
	next := 0
parts:
	for _, part := range strings.Split(rest[1:], "-") {
		for i := next; i < len(sufs); i++ {
			s := sufs[i]
			if !s.matches(part) {
				continue
			}
			if s.flag != nil {
				*s.flag = true
			} else if !s.value(part[len(s.name):]) {
				return false
			}
			next = i + 1
			continue parts
		}
		return false
	}
	return true
}

// mfCutBase cuts "asha-"+base or "hb-"+base off the method name m: the
// suffixes that follow, and whether it is the one-bracket (ASHA) form.
func mfCutBase(m, base string) (rest string, asha, ok bool) {
	if rest, ok := strings.CutPrefix(m, "asha-"+base); ok {
		return rest, true, true
	}
	rest, ok = strings.CutPrefix(m, "hb-"+base)
	return rest, false, ok
}
