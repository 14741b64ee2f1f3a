package script

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/environments"
)

// ErrNoResults is wrapped when a results file holds no data (empty, or a
// header without rows).
var ErrNoResults = errors.New("no results")

// MinTelemetryTime is the earliest accepted telemetry timestamp (as in
// mlos_bench: earlier ones are taken for parse errors, e.g. numbers read
// as nanoseconds since 1970).
var MinTelemetryTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxCSVLine is the longest line of a results or telemetry file: a longer
// one (a file of NULs or binary data without a newline) is refused before
// it is parsed, so that neither memory nor the failure reason grows with
// it.
const MaxCSVLine = 1 << 20

// checkText refuses data that is not a text CSV file: a NUL byte, or a
// line longer than MaxCSVLine. The error names the line and the byte
// offset of the problem, and quotes none of the data.
func checkText(data []byte) error {
	line, start := 1, 0
	for start <= len(data) {
		end := bytes.IndexByte(data[start:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += start
		}
		if i := bytes.IndexByte(data[start:end], 0); i >= 0 {
			return fmt.Errorf("line %d, byte offset %d: a NUL byte: this is not a text (CSV) file", line, start+i)
		}
		if end-start > MaxCSVLine {
			return fmt.Errorf("line %d (from byte offset %d) is longer than %d bytes (%d bytes without a newline): this is not a CSV file", line, start, MaxCSVLine, end-start)
		}
		line++
		start = end + 1
	}
	return nil
}

// Short quotes user text for an error message: whole when short, else its
// first bytes and its length, so that an error never grows with the data.
func Short(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// shortJoin is Short for a row of fields.
func shortJoin(fields []string) string {
	s := strings.Join(fields, ",")
	if len(s) <= 200 {
		return s
	}
	return Short(s)
}

func readCSV(data []byte) ([][]string, []int, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if err := checkText(data); err != nil {
		return nil, nil, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	var recs [][]string
	var lines []int
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		line, _ := r.FieldPos(0)
		recs = append(recs, rec)
		lines = append(lines, line)
	}
	return recs, lines, nil
}

func trimAll(rec []string) []string {
	out := make([]string, len(rec))
	for i, s := range rec {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

func equal(a []string, b ...string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CSVValue converts a CSV cell as pandas does: an empty cell is nil,
// True/False are booleans, numbers become int64 or float64, anything else
// stays text.
func CSVValue(s string) any {
	t := strings.TrimSpace(s)
	switch t {
	case "":
		return nil
	case "True", "true", "TRUE":
		return true
	case "False", "false", "FALSE":
		return false
	}
	if v := configs.ParseScalar(t); !isString(v) {
		return v
	}
	return s
}

// ParseResults reads a results CSV file in long format (header exactly
// "metric,value", one metric per row) or wide format (any other header and
// exactly one data row). An empty file or a header without rows wraps
// ErrNoResults.
func ParseResults(data []byte) (map[string]any, error) {
	recs, lines, err := readCSV(data)
	if err != nil {
		return nil, fmt.Errorf("not a valid CSV file: %w", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("the file is empty: %w", ErrNoResults)
	}
	header := trimAll(recs[0])
	rows := recs[1:]
	if len(rows) == 0 {
		return nil, fmt.Errorf("the file has a header (%s) but no data rows: %w", shortJoin(header), ErrNoResults)
	}
	out := map[string]any{}
	switch {
	case equal(header, "metric", "value"):
		for i, row := range rows {
			if len(row) != 2 {
				return nil, fmt.Errorf("line %d: long format (metric,value) needs 2 columns, got %d", lines[i+1], len(row))
			}
			name := strings.TrimSpace(row[0])
			if name == "" {
				return nil, fmt.Errorf("line %d: empty metric name", lines[i+1])
			}
			out[name] = CSVValue(row[1])
		}
	case len(rows) == 1:
		row := rows[0]
		if len(row) != len(header) {
			return nil, fmt.Errorf("line %d: wide format: the header has %d columns but the data row has %d", lines[1], len(header), len(row))
		}
		for i, name := range header {
			if name == "" {
				return nil, fmt.Errorf("line %d: column %d has no name", lines[0], i+1)
			}
			if _, dup := out[name]; dup {
				return nil, fmt.Errorf("line %d: column %s appears twice", lines[0], Short(name))
			}
			out[name] = CSVValue(row[i])
		}
	default:
		return nil, fmt.Errorf("unknown layout: the header (%s) is not \"metric,value\" (long format) and there are %d data rows (wide format needs exactly one)",
			shortJoin(header), len(rows))
	}
	return out, nil
}

// ParseTelemetry reads a telemetry CSV file: rows of timestamp,metric,value
// with that header or none. Timestamps without a zone are in loc; all are
// returned in UTC and must be after MinTelemetryTime.
func ParseTelemetry(data []byte, loc *time.Location) ([]environments.Telemetry, error) {
	recs, lines, err := readCSV(data)
	if err != nil {
		return nil, fmt.Errorf("not a valid CSV file: %w", err)
	}
	var out []environments.Telemetry
	for i, rec := range recs {
		if len(rec) != 3 {
			return nil, fmt.Errorf("line %d: %d columns; telemetry rows must be timestamp,metric,value", lines[i], len(rec))
		}
		f := trimAll(rec)
		if i == 0 && equal(f, "timestamp", "metric", "value") {
			continue
		}
		ts, err := ParseTimestamp(f[0], loc)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("line %d: %v (the header, if any, must be exactly \"timestamp,metric,value\")", lines[i], err)
			}
			return nil, fmt.Errorf("line %d: %v", lines[i], err)
		}
		if !ts.After(MinTelemetryTime) {
			return nil, fmt.Errorf("line %d: timestamp %s is not after %s", lines[i], Short(f[0]), MinTelemetryTime.Format("2006-01-02"))
		}
		if f[1] == "" {
			return nil, fmt.Errorf("line %d: empty metric name", lines[i])
		}
		out = append(out, environments.Telemetry{Ts: ts, Metric: f[1], Value: CSVValue(rec[2])})
	}
	return out, nil
}

// Layouts of timestamps with a zone ("Z07:00" also accepts "Z").
var zonedLayouts = []string{
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05 Z07:00",
	"2006-01-02T15:04:05 Z0700",
	"2006-01-02T15:04:05-07",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04Z0700",
}

// Layouts of naive timestamps.
var naiveLayouts = []string{
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTimestamp reads a timestamp: ISO 8601 / RFC 3339 with 'T' or a
// space between date and time, '-' or '/' in the date, optional fractional
// seconds, and an optional zone (Z, UTC, GMT, +hh:mm, +hhmm, +hh). A
// timestamp without a zone is in loc.
func ParseTimestamp(s string, loc *time.Location) (time.Time, error) {
	t := strings.TrimSpace(s)
	orig := t
	if len(t) >= 10 && t[4] == '/' && t[7] == '/' {
		t = t[:4] + "-" + t[5:7] + "-" + t[8:]
	}
	if len(t) > 10 && t[10] == ' ' {
		t = t[:10] + "T" + strings.TrimLeft(t[11:], " ")
	}
	for _, z := range []string{" UTC", " GMT", "UTC", "GMT"} {
		if rest, ok := strings.CutSuffix(t, z); ok && len(rest) > 10 {
			t = strings.TrimRight(rest, " ") + "Z"
			break
		}
	}
	for _, l := range zonedLayouts {
		if ts, err := time.Parse(l, t); err == nil {
			return ts.UTC(), nil
		}
	}
	for _, l := range naiveLayouts {
		if ts, err := time.ParseInLocation(l, t, loc); err == nil {
			return ts.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("cannot read %s as a timestamp (want e.g. 2024-10-25 13:45:00, 2024-10-25T13:45:00.123Z or 2024-10-25 13:45:00 +0200)", Short(orig))
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}
