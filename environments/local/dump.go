package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/benchtune/bench/configs"
)

// dumpFiles writes dump_params_file (the environment's tunable values) and
// dump_meta_file (the meta of the tunables that have one) into dir, as
// JSON objects in the tunables' order, formatted as Python's json.dump
// does (so a float stays a float: 1.0, not 1).
func (e *Env) dumpFiles(dir string) error {
	if e.dumpParams != "" {
		var b bytes.Buffer
		b.WriteByte('{')
		for i, t := range e.Tunables().Tunables() {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(&b, t.Name())
			b.WriteString(": ")
			writeJSON(&b, t.Value())
		}
		b.WriteByte('}')
		if err := writeFile(dir, e.dumpParams, b.Bytes()); err != nil {
			return fmt.Errorf("%s: dump_params_file: %w", e.who(), err)
		}
	}
	if e.dumpMeta != "" {
		var b bytes.Buffer
		b.WriteByte('{')
		n := 0
		for _, t := range e.Tunables().Tunables() {
			meta := t.Meta()
			if len(meta) == 0 {
				continue
			}
			if n > 0 {
				b.WriteString(", ")
			}
			n++
			writeJSON(&b, t.Name())
			b.WriteString(": ")
			writeJSON(&b, meta)
		}
		b.WriteByte('}')
		if err := writeFile(dir, e.dumpMeta, b.Bytes()); err != nil {
			return fmt.Errorf("%s: dump_meta_file: %w", e.who(), err)
		}
	}
	return nil
}

func writeFile(dir, name string, data []byte) error {
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// writeJSON writes v as Python's json.dumps does with its default
// separators; maps are written with sorted keys.
func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case float64:
		switch {
		case math.IsNaN(x):
			b.WriteString("NaN")
		case math.IsInf(x, 1):
			b.WriteString("Infinity")
		case math.IsInf(x, -1):
			b.WriteString("-Infinity")
		default:
			b.WriteString(configs.PyFloat(x))
		}
	case []any:
		b.WriteByte('[')
		for i, el := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, el)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSON(b, k)
			b.WriteString(": ")
			writeJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			// Only strings, numbers, booleans and nil reach here.
			b.WriteString("null")
			return
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
}
