package schemas

import (
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
)

func TestThresholdsKind(t *testing.T) {
	for _, tc := range []struct{ file, text, want string }{
		{"th.jsonc", `{"metrics": {"lat": {"max_increase": "5%"}}}`, ""},
		{"ci-thresholds.jsonc", `{"alpha": 0.01, "metrics": {"tp": {"max_decrease": "0%"}, "lat": {"max_increase": "2.5%", "max_decrease": "50%"}}}`, ""},
		{"thresholds.jsonc", `{"metrics": {"lat": {"max_increase": 5}}}`, "thresholds.jsonc:1:38: at /metrics/lat/max_increase: expected string, got number"},
		{"thresholds.jsonc", `{"metrics": {"lat": {"max_increase": "5"}}}`, "/metrics/lat/max_increase"},
		{"thresholds.jsonc", `{"alpha": 1, "metrics": {"lat": {"max_increase": "5%"}}}`, "/alpha"},
	} {
		doc, err := source.Parse(tc.file, []byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		k, err := DetectKind(doc)
		if err != nil || k != Thresholds {
			t.Errorf("%s: kind %q (%v), want %q", tc.text, k, err, Thresholds)
			continue
		}
		err = Validate(k, doc)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.text, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want %q", tc.text, err, tc.want)
		}
	}
}
