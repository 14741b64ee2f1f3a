package script

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benchtune/bench/internal/tail"
	"github.com/benchtune/bench/trial"
)

// Intermediate results of a running script (bench only; see
// docs/progress.md): lines of its output that match progress_pattern, and
// rows appended to a progress file (LocalEnv's progress_file). Each report
// reaches the trial's progress listener (environments.ProgressFrom) while
// the script runs.

// DefaultProgressPattern is the documented default line format:
// "BENCH_PROGRESS step=3 latency_ms=12.5".
const DefaultProgressPattern = `^BENCH_PROGRESS\b`

// CompileProgressPattern compiles a progress_pattern, applied to each
// output line. Its named groups other than "step" and "ts" are metrics
// named after the group; a pattern without such groups marks a progress
// line, whose text after the match is read as "name=value" pairs.
func CompileProgressPattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("empty pattern (every line would match); for the default format use %q", DefaultProgressPattern)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression %q: %v", p, err)
	}
	for _, n := range re.SubexpNames() {
		if n != "" && strings.TrimSpace(n) == "" {
			return nil, fmt.Errorf("regular expression %q has a group without a name", p)
		}
	}
	return re, nil
}

// Progress turns a running script's output lines and progress file rows
// into trial.Progress reports. Reports without a step get the step after
// the previous report's (the first: 0). Safe for concurrent use.
type Progress struct {
	fn func(trial.Progress)
	re *regexp.Regexp

	mu   sync.Mutex
	next int64
	// Bad counts lines that matched but could not be read (see Err).
	bad int
	err error
}

// NewProgress returns a reporter to fn reading lines with re (nil: no
// line is a progress line). nil fn gives nil: every method of a nil
// *Progress does nothing.
func NewProgress(fn func(trial.Progress), re *regexp.Regexp) *Progress {
	if fn == nil {
		return nil
	}
	return &Progress{fn: fn, re: re}
}

// Err returns how many progress reports were malformed and the first.
func (p *Progress) Err() (int, error) {
	if p == nil {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bad, p.err
}

func (p *Progress) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.bad++
	p.mu.Unlock()
}

// Write takes output as services.ExecRequest.Live gives it (whole lines)
// and reports its progress lines.
func (p *Progress) Write(b []byte) (int, error) {
	if p == nil || p.re == nil {
		return len(b), nil
	}
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		p.Line(strings.TrimRight(l, "\r"))
	}
	return len(b), nil
}

// Line reports line when it matches the pattern.
func (p *Progress) Line(line string) {
	if p == nil || p.re == nil {
		return
	}
	m := p.re.FindStringSubmatchIndex(line)
	if m == nil {
		return
	}
	values := map[string]any{}
	var step *int64
	var ts time.Time
	set := func(name, text string) error {
		switch name {
		case "step":
			n, err := parseStep(text)
			if err != nil {
				return err
			}
			step = &n
		case "ts", "timestamp":
			t, err := ParseTimestamp(text, time.Local)
			if err != nil {
				return err
			}
			ts = t
		default:
			if v := CSVValue(text); v != nil {
				values[name] = v
			}
		}
		return nil
	}
	named := false
	for i, name := range p.re.SubexpNames() {
		if name == "" || m[2*i] < 0 {
			continue
		}
		named = named || (name != "step" && name != "ts")
		if err := set(name, line[m[2*i]:m[2*i+1]]); err != nil {
			p.fail(fmt.Errorf("progress line %q: group %s: %v", Short(line), name, err))
			return
		}
	}
	if !named {
		for _, f := range strings.Fields(line[m[1]:]) {
			k, v, ok := strings.Cut(f, "=")
			if !ok || k == "" {
				p.fail(fmt.Errorf("progress line %q: %q is not name=value", Short(line), Short(f)))
				return
			}
			if err := set(k, v); err != nil {
				p.fail(fmt.Errorf("progress line %q: %s: %v", Short(line), k, err))
				return
			}
		}
	}
	p.report(step, ts, values)
}

func parseStep(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	// 3.0 as written by Python.
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f == math.Trunc(f) && f < 1<<53 {
		return int64(f), nil
	}
	return 0, fmt.Errorf("step %q is not a whole number >= 0", Short(s))
}

func (p *Progress) report(step *int64, ts time.Time, values map[string]any) {
	if len(values) == 0 {
		return
	}
	p.mu.Lock()
	s := p.next
	if step != nil {
		s = *step
	}
	p.next = s + 1
	p.mu.Unlock()
	p.fn(trial.Progress{Step: s, Ts: ts, Values: values})
}

// ProgressFile reads the rows appended to a progress file while the
// script runs: JSON lines (a name ending in .jsonl or .ndjson), one object
// per line, either {"step": 3, "ts": "...", "values": {"loss": 0.5}} or
// {"step": 3, "loss": 0.5}; or else CSV with a header row, whose columns
// "step" and "ts"/"timestamp" are the step and time and every other column
// a metric.
type ProgressFile struct {
	p      *Progress
	r      tail.Reader
	json   bool
	header []string
	line   int
}

// NewProgressFile follows path for p (nil p: nil, which reads nothing).
func NewProgressFile(p *Progress, path string, max int64) *ProgressFile {
	if p == nil {
		return nil
	}
	lower := strings.ToLower(path)
	return &ProgressFile{p: p, r: tail.Reader{Path: path, What: "progress file", Max: max},
		json: strings.HasSuffix(lower, ".jsonl") || strings.HasSuffix(lower, ".ndjson")}
}

// Poll reports the rows written since the last poll; final: the script
// ended (a last row without a newline counts). A row that cannot be read
// is counted (Progress.Err) and skipped; an error is returned only when
// the file cannot be read.
func (f *ProgressFile) Poll(final bool) error {
	if f == nil {
		return nil
	}
	lines, err := f.r.Lines(final)
	if err != nil {
		return err
	}
	for _, l := range lines {
		f.line++
		if strings.TrimSpace(l) == "" {
			continue
		}
		if err := f.row(l); err != nil {
			f.p.fail(fmt.Errorf("progress file %s, line %d: %v", f.r.Path, f.line, err))
		}
	}
	return nil
}

func (f *ProgressFile) row(l string) error {
	var fields map[string]any
	if f.json {
		if err := json.Unmarshal([]byte(l), &fields); err != nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
		if vals, ok := fields["values"].(map[string]any); ok {
			for k, v := range vals {
				fields[k] = v
			}
			delete(fields, "values")
		}
	} else {
		rec, err := csv.NewReader(strings.NewReader(l)).Read()
		if err != nil {
			return err
		}
		rec = trimAll(rec)
		if f.header == nil {
			if slices.Contains(rec, "") {
				return fmt.Errorf("the header row %q has an empty column name", Short(l))
			}
			f.header = rec
			return nil
		}
		if len(rec) != len(f.header) {
			return fmt.Errorf("%d fields, the header has %d", len(rec), len(f.header))
		}
		fields = map[string]any{}
		for i, h := range f.header {
			fields[h] = rec[i]
		}
	}
	values := map[string]any{}
	var step *int64
	var ts time.Time
	for k, v := range fields {
		if str, ok := v.(string); ok && strings.TrimSpace(str) == "" {
			continue // an empty cell: not given
		}
		switch k {
		case "step":
			s, ok := v.(string)
			if !ok {
				s = fmt.Sprint(v)
			}
			n, err := parseStep(s)
			if err != nil {
				return err
			}
			step = &n
		case "ts", "timestamp":
			s, ok := v.(string)
			if !ok {
				return fmt.Errorf("%s: want a timestamp text, got %v", k, v)
			}
			t, err := ParseTimestamp(s, time.Local)
			if err != nil {
				return fmt.Errorf("%s: %v", k, err)
			}
			ts = t
		default:
			switch x := v.(type) {
			case string:
				if cv := CSVValue(x); cv != nil {
					values[k] = cv
				}
			case float64, bool:
				values[k] = x
			case nil:
			default:
				return fmt.Errorf("%s: want a number, text or boolean, got %v", k, v)
			}
		}
	}
	f.p.report(step, ts, values)
	return nil
}
