package trial

import "testing"

func TestFidelityGlobals(t *testing.T) {
	meta := map[string]string{FidelityParamKey: "duration_s", FidelityKey: "15", FidelityMaxKey: "60",
		FidelityRungKey: "1", ContinueFromKey: "7", CheckpointDirKey: "/ck/config-1", "repeat_i": "1"}
	// The experiment's duration_s (full fidelity's default) is overridden.
	g := Globals(map[string]any{"duration_s": int64(60)}, meta, nil, "e", 9, 1)
	if g["duration_s"] != int64(15) || g[FidelityKey] != "15" || g[ContinueFromKey] != "7" || g[CheckpointDirKey] != "/ck/config-1" {
		t.Errorf("globals %v", g)
	}
	meta[FidelityKey] = "0.25"
	if g := Globals(nil, meta, nil, "e", 9, 1); g["duration_s"] != 0.25 {
		t.Errorf("float fidelity: %v", g["duration_s"])
	}
	// A device slot's globals still win (extra), and a trial without a
	// fidelity is untouched.
	if g := Globals(map[string]any{"duration_s": int64(60)}, map[string]string{"repeat_i": "1"}, nil, "e", 1, 1); g["duration_s"] != int64(60) {
		t.Errorf("no fidelity: %v", g["duration_s"])
	}
	if !LowFidelity(map[string]string{FidelityKey: "5", FidelityMaxKey: "60"}) || LowFidelity(map[string]string{FidelityKey: "60", FidelityMaxKey: "60"}) || LowFidelity(nil) {
		t.Error("LowFidelity")
	}
}
