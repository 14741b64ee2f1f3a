package ci

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// Samples are the measurements of one side of a comparison: per
// configuration, the values of each metric over its successful trials.
type Samples struct {
	// Name says where they come from ("experiment E", a file name).
	Name    string          `json:"name"`
	Configs []ConfigSamples `json:"configs"`
}

// ConfigSamples are the values of one configuration.
type ConfigSamples struct {
	// Key identifies the configuration (its config hash), Label names it
	// for people ("defaults", "config 3", a tunable values file).
	Key    string               `json:"key"`
	Label  string               `json:"label"`
	Params map[string]string    `json:"params,omitempty"`
	Values map[string][]float64 `json:"values"`
	// Trials counts the successful trials.
	Trials int `json:"trials"`
}

// Find returns the configuration with key (nil when there is none).
func (s *Samples) Find(key string) *ConfigSamples {
	for i := range s.Configs {
		if s.Configs[i].Key == key {
			return &s.Configs[i]
		}
	}
	return nil
}

// FromTrials groups the successful trials by configuration, in order of
// first appearance; finite numeric results become samples. label names a
// configuration (nil: "config <id>").
func FromTrials(name string, trials []storage.Trial, label func(t storage.Trial) string) *Samples {
	s := &Samples{Name: name}
	idx := map[string]int{}
	for _, t := range trials {
		if t.Status != trial.SUCCEEDED {
			continue
		}
		i, ok := idx[t.ConfigHash]
		if !ok {
			l := "config " + strconv.FormatInt(t.ConfigID, 10)
			if label != nil {
				l = label(t)
			}
			i = len(s.Configs)
			idx[t.ConfigHash] = i
			s.Configs = append(s.Configs, ConfigSamples{Key: t.ConfigHash, Label: l, Params: t.Params, Values: map[string][]float64{}})
		}
		c := &s.Configs[i]
		c.Trials++
		for _, m := range t.Results.Names() {
			if v, ok := t.Results.Float(m); ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
				c.Values[m] = append(c.Values[m], v)
			}
		}
	}
	return s
}

// ReadFile reads a result file as samples. The format is told from the
// content: go test -bench output, hyperfine --export-json, Google
// Benchmark JSON, pytest-benchmark JSON (see importfmt.go), or a bench
// export file (CSV, or JSON: an array of rows): its SUCCEEDED rows
// grouped by config_hash (or, without that column, by the config.*
// columns), the result.* columns as metrics.
func ReadFile(path string) (*Samples, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var read func(string, []byte) (*Samples, error)
	switch detectFormat(data) {
	case FormatGoTest:
		read = readGoTest
	case FormatHyperfine:
		read = readHyperfine
	case FormatGoogleBench:
		read = readGoogleBench
	case FormatPytest:
		read = readPytest
	}
	if read != nil {
		s, err := read(filepath.Base(path), data)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", path, detectFormat(data), err)
		}
		return s, nil
	}
	var rows []map[string]string
	trimmed := bytes.TrimSpace(data)
	if strings.EqualFold(filepath.Ext(path), ".json") || (len(trimmed) > 0 && trimmed[0] == '[') {
		rows, err = readJSONRows(data)
	} else {
		rows, err = readCSVRows(data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Samples{Name: filepath.Base(path)}
	idx := map[string]int{}
	for _, row := range rows {
		if st, ok := row["status"]; ok && !strings.EqualFold(st, trial.SUCCEEDED.String()) {
			continue
		}
		params := map[string]string{}
		for k, v := range row {
			if p, ok := strings.CutPrefix(k, "config."); ok {
				params[p] = v
			}
		}
		key := row["config_hash"]
		if key == "" {
			key = storage.HashParams(params)
		}
		i, ok := idx[key]
		if !ok {
			label := "config " + row["config_id"]
			if row["config_id"] == "" {
				label = fmt.Sprintf("config %d", len(s.Configs)+1)
			}
			i = len(s.Configs)
			idx[key] = i
			s.Configs = append(s.Configs, ConfigSamples{Key: key, Label: label, Params: params, Values: map[string][]float64{}})
		}
		c := &s.Configs[i]
		c.Trials++
		for k, v := range row {
			m, ok := strings.CutPrefix(k, "result.")
			if !ok || v == "" {
				continue
			}
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				continue // a text result, or no measurement
			}
			c.Values[m] = append(c.Values[m], f)
		}
	}
	if len(s.Configs) == 0 {
		return nil, fmt.Errorf("%s: no SUCCEEDED trial (is it a bench export file?)", path)
	}
	return s, nil
}

func readCSVRows(data []byte) ([]map[string]string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the CSV header: %w", err)
	}
	if !slices.Contains(header, "status") && !slices.ContainsFunc(header, func(h string) bool { return strings.HasPrefix(h, "result.") }) {
		return nil, fmt.Errorf("not a bench export CSV: no status or result.* column")
	}
	var rows []map[string]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		row := make(map[string]string, len(header))
		for i, h := range header {
			if i < len(rec) {
				row[h] = rec[i]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func readJSONRows(data []byte) ([]map[string]string, error) {
	var raw []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a bench export JSON file (an array of row objects): %w", err)
	}
	rows := make([]map[string]string, len(raw))
	for i, r := range raw {
		row := make(map[string]string, len(r))
		for k, v := range r {
			switch v := v.(type) {
			case nil:
			case string:
				row[k] = v
			case json.Number:
				row[k] = v.String()
			default:
				row[k] = fmt.Sprint(v)
			}
		}
		rows[i] = row
	}
	return rows, nil
}
