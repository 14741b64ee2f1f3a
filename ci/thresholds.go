// Package ci compares benchmark results with a baseline for bench ci and
// bench compare: samples of each metric per configuration, thresholds
// written in config, a verdict per metric and configuration decided with
// the Mann–Whitney U test, and the reports (text, Markdown, JUnit XML,
// JSON). It also writes and reads the tidy trial table of bench export,
// which can serve as a baseline.
package ci

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
)

// DefaultAlpha is the significance level when the thresholds file does
// not set one.
const DefaultAlpha = 0.05

// Thresholds are the rules of a CI comparison (a thresholds file):
//
//	{
//	  "alpha": 0.05,   // optional significance level of the Mann–Whitney test
//	  "metrics": {
//	    "latency_p50": {"max_increase": "5%"},   // must not rise more than 5%
//	    "throughput":  {"max_decrease": "0%"}    // must not fall
//	  }
//	}
type Thresholds struct {
	Alpha   float64 `json:"alpha"`
	Metrics []Rule  `json:"metrics"`
}

// Rule limits the change of one metric's median relative to the
// baseline's. A nil limit is not checked.
type Rule struct {
	Metric string `json:"metric"`
	// MaxIncrease and MaxDecrease are fractions (0.05 for "5%").
	MaxIncrease *float64 `json:"max_increase,omitempty"`
	MaxDecrease *float64 `json:"max_decrease,omitempty"`
}

// String renders the rule's limits ("max_increase 5%").
func (r Rule) String() string {
	var parts []string
	if r.MaxIncrease != nil {
		parts = append(parts, "max_increase "+FormatPercent(*r.MaxIncrease))
	}
	if r.MaxDecrease != nil {
		parts = append(parts, "max_decrease "+FormatPercent(*r.MaxDecrease))
	}
	return strings.Join(parts, ", ")
}

// FormatPercent writes a fraction as a percentage without trailing zeros.
func FormatPercent(f float64) string {
	return strconv.FormatFloat(f*100, 'f', -1, 64) + "%"
}

// LoadThresholds reads a thresholds file (JSON5); errors name the file,
// line and column.
func LoadThresholds(path string) (*Thresholds, error) {
	doc, err := source.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseThresholds(doc)
}

// ParseThresholds decodes a parsed thresholds document.
func ParseThresholds(doc *source.Doc) (*Thresholds, error) {
	root := doc.Root
	if root.Kind != json5.Object {
		return nil, doc.Errorf(nil, "a thresholds file must be an object with \"metrics\" (and optionally \"alpha\"), got %s", root.Kind)
	}
	th := &Thresholds{Alpha: DefaultAlpha}
	for _, m := range root.Members {
		switch m.Key {
		case "$schema", "description":
		case "alpha":
			if m.Value.Kind != json5.Number || !(m.Value.Float > 0 && m.Value.Float < 1) {
				return nil, doc.Errorf([]string{"alpha"}, "alpha must be a number between 0 and 1 (exclusive), e.g. 0.05")
			}
			th.Alpha = m.Value.Float
		case "metrics":
		default:
			return nil, doc.KeyErrorf([]string{m.Key}, "unknown key %q: a thresholds file has \"alpha\" and \"metrics\"", m.Key)
		}
	}
	metrics := root.Get("metrics")
	if metrics == nil {
		return nil, doc.Errorf(nil, "missing \"metrics\": e.g. {\"metrics\": {\"latency_p50\": {\"max_increase\": \"5%%\"}}}")
	}
	if metrics.Kind != json5.Object || len(metrics.Members) == 0 {
		return nil, doc.Errorf([]string{"metrics"}, "\"metrics\" must be a non-empty object of metric name to limits")
	}
	for _, m := range metrics.Members {
		path := []string{"metrics", m.Key}
		if m.Key == "" {
			return nil, doc.KeyErrorf(path, "empty metric name")
		}
		if m.Value.Kind != json5.Object || len(m.Value.Members) == 0 {
			return nil, doc.Errorf(path, "limits of %q must be an object with \"max_increase\" and/or \"max_decrease\", e.g. {\"max_increase\": \"5%%\"}", m.Key)
		}
		rule := Rule{Metric: m.Key}
		for _, lim := range m.Value.Members {
			lpath := append(append([]string(nil), path...), lim.Key)
			var dst **float64
			switch lim.Key {
			case "max_increase":
				dst = &rule.MaxIncrease
			case "max_decrease":
				dst = &rule.MaxDecrease
			default:
				return nil, doc.KeyErrorf(lpath, "unknown limit %q: use \"max_increase\" or \"max_decrease\"", lim.Key)
			}
			f, err := ParsePercent(lim.Value)
			if err != nil {
				return nil, doc.Errorf(lpath, "%v", err)
			}
			*dst = &f
		}
		th.Metrics = append(th.Metrics, rule)
	}
	return th, nil
}

// ParsePercent reads a limit: a string "5%" or "0.5%" (a percentage of the
// baseline's median, >= 0). A bare number is refused: "5" could mean 5%
// or 500%.
func ParsePercent(n *json5.Node) (float64, error) {
	if n.Kind != json5.String {
		return 0, fmt.Errorf("a limit is a percentage written as a string, e.g. \"5%%\", got %s", n.Kind)
	}
	s := strings.TrimSpace(n.Str)
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Errorf("limit %q must end with %% (e.g. \"5%%\")", n.Str)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("limit %q is not a percentage >= 0", n.Str)
	}
	return f / 100, nil
}
