package trial

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// TestTelemetryJSONKeepsStep: a progress report stored as telemetry keeps
// its step in JSON (bench show --format json, docs/progress.md), plain
// telemetry has none, and non-finite values are still written as strings.
func TestTelemetryJSONKeepsStep(t *testing.T) {
	ts := time.Date(2026, 11, 27, 16, 0, 0, 0, time.UTC)
	step := int64(3)
	b, err := json.Marshal(Telemetry{Ts: ts, Metric: "loss", Value: 0.5, Step: &step})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ts":"2026-11-27T16:00:00Z","metric":"loss","value":0.5,"step":3}`; string(b) != want {
		t.Fatalf("progress telemetry: got %s, want %s", b, want)
	}
	var back Telemetry
	if err := json.Unmarshal(b, &back); err != nil || back.Step == nil || *back.Step != 3 {
		t.Fatalf("read back: %+v, %v", back, err)
	}
	b, err = json.Marshal(Telemetry{Ts: ts, Metric: "cpu", Value: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "step") || !strings.Contains(s, `"value":"inf"`) {
		t.Fatalf("plain telemetry: got %s", s)
	}
}
