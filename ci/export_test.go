package ci

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/benchtune/bench/storage"
	_ "github.com/benchtune/bench/storage/sql"
	"github.com/benchtune/bench/trial"
)

// TestExportTable stores two trials with results and telemetry in a real
// SQLite file and checks the tidy table: one row per trial, typed cells,
// telemetry summaries, empty (CSV) or null (JSON) where a value is missing.
func TestExportTable(t *testing.T) {
	ctx := context.Background()
	cfg := storage.DefaultConfig()
	cfg.Database = filepath.Join(t.TempDir(), "bench.sqlite")
	st, err := storage.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "x", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, p := range []map[string]string{{"level": "6", "fmt": "zlib"}, {"level": "1", "fmt": "gzip"}} {
		tr, err := exp.NewTrial(ctx, storage.TrialSpec{Params: p, TsStart: t0})
		if err != nil {
			t.Fatal(err)
		}
		out := storage.TrialOutcome{Status: trial.SUCCEEDED, Ts: t0.Add(1500 * time.Millisecond), Results: map[string]any{"score": 2.5 + float64(i), "note": "ok"}}
		if i == 0 {
			out.Telemetry = []storage.Telemetry{{Ts: t0, Metric: "cpu", Value: 1.0}, {Ts: t0.Add(time.Second), Metric: "cpu", Value: 3.0}, {Ts: t0, Metric: "state", Value: "warm"}}
		} else {
			out = storage.TrialOutcome{Status: trial.FAILED, Ts: t0.Add(time.Second), FailureReason: "exit 1"}
		}
		if err := exp.Finish(ctx, tr.ID, out); err != nil {
			t.Fatal(err)
		}
	}
	trials, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ExportTable(ctx, exp, trials)
	if err != nil {
		t.Fatal(err)
	}
	var cbuf, jbuf bytes.Buffer
	if err := tb.WriteCSV(&cbuf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cbuf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]map[string]string, 0, 2)
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = r[i]
		}
		rows = append(rows, m)
	}
	want0 := map[string]string{"experiment_id": "x", "trial_id": "1", "status": "SUCCEEDED", "config.level": "6", "config.fmt": "zlib",
		"result.score": "2.5", "result.note": "ok", "ts_start": "2026-01-02T03:04:05Z", "duration_s": "1.5",
		"telemetry.cpu.mean": "2", "telemetry.cpu.min": "1", "telemetry.cpu.max": "3", "failure_reason": "", "retry_of": ""}
	for k, v := range want0 {
		if rows[0][k] != v {
			t.Errorf("row 1 %s = %q, want %q", k, rows[0][k], v)
		}
	}
	if rows[1]["status"] != "FAILED" || rows[1]["failure_reason"] != "exit 1" || rows[1]["result.score"] != "" || rows[1]["telemetry.cpu.mean"] != "" {
		t.Errorf("row 2: %v", rows[1])
	}
	if _, ok := rows[0]["telemetry.state.mean"]; ok {
		t.Error("a text telemetry metric got numeric summaries")
	}
	if err := tb.WriteJSON(&jbuf); err != nil {
		t.Fatal(err)
	}
	var js []map[string]any
	if err := json.Unmarshal(jbuf.Bytes(), &js); err != nil {
		t.Fatalf("%v\n%s", err, jbuf.String())
	}
	if len(js) != 2 || js[0]["config.level"] != 6.0 || js[0]["config.fmt"] != "zlib" || js[0]["telemetry.cpu.mean"] != 2.0 ||
		js[1]["result.score"] != nil || len(js[1]) != len(tb.Columns) {
		t.Errorf("json: %v", js)
	}
}

// TestExportJSONFloats: a float tunable's whole value (stored "0.0", as
// mlos_bench stores it) stays a float in JSON (0.0, not 0); integers stay
// integers.
func TestExportJSONFloats(t *testing.T) {
	tb := &Table{Columns: []string{"config.ratio", "config.r2", "config.level", "result.score", "big", "nan"},
		Rows: [][]any{{cell("0.0"), cell("2.0"), cell("6"), 1.0, 1e22, math.NaN()}}}
	var b bytes.Buffer
	if err := tb.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	want := `[` + "\n" + `  {"config.ratio": 0.0, "config.r2": 2.0, "config.level": 6, "result.score": 1.0, "big": 1e+22, "nan": null}` + "\n]\n"
	if b.String() != want {
		t.Errorf("got  %s\nwant %s", b.String(), want)
	}
	var js []map[string]any
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
}

// TestExportReusedColumn: a trial that reused the result of an identical
// trial is exported with reused_from = that trial's id (CSV and JSON), and
// a measured trial has the column empty (CSV) or null (JSON).
func TestExportReusedColumn(t *testing.T) {
	ctx := context.Background()
	cfg := storage.DefaultConfig()
	cfg.Database = filepath.Join(t.TempDir(), "bench.sqlite")
	st, err := storage.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "x", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := map[string]string{"level": "6"}
	first, err := exp.NewTrial(ctx, storage.TrialSpec{Params: p, TsStart: t0})
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Finish(ctx, first.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Ts: t0.Add(time.Second), Results: map[string]any{"score": 2.0}}); err != nil {
		t.Fatal(err)
	}
	copyT, err := exp.NewTrial(ctx, storage.TrialSpec{Params: p, TsStart: t0.Add(2 * time.Second), ReusedFrom: &storage.TrialRef{TrialID: first.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.Finish(ctx, copyT.ID, storage.TrialOutcome{Status: trial.SUCCEEDED, Ts: t0.Add(2 * time.Second), Results: map[string]any{"score": 2.0}}); err != nil {
		t.Fatal(err)
	}
	trials, err := exp.Trials(ctx, storage.TrialFilter{})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ExportTable(ctx, exp, trials)
	if err != nil {
		t.Fatal(err)
	}
	var cbuf, jbuf bytes.Buffer
	if err := tb.WriteCSV(&cbuf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cbuf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	ri, ok := col["reused_from"]
	if !ok {
		t.Fatalf("no reused_from column: %v", recs[0])
	}
	if len(recs) != 3 || recs[1][ri] != "" || recs[2][ri] != strconv.Itoa(first.ID) || recs[2][col["reused_from_experiment"]] != "x" {
		t.Errorf("reused_from cells: %v", recs)
	}
	if err := tb.WriteJSON(&jbuf); err != nil {
		t.Fatal(err)
	}
	var js []map[string]any
	if err := json.Unmarshal(jbuf.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if js[0]["reused_from"] != nil || js[1]["reused_from"] != float64(first.ID) {
		t.Errorf("json reused_from: %v", js)
	}
}
