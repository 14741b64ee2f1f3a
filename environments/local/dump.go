package local

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/safefs"
)

// dumpFiles writes dump_params_file (the environment's tunable values) and
// dump_meta_file (the meta of the tunables that have one) into dir, as
// JSON objects in the tunables' order, formatted as Python's json.dump
// does (so a float stays a float: 1.0, not 1).
func (e *Env) dumpFiles(ctx context.Context, dir string) error {
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
		if err := writeFile(ctx, dir, e.dumpParams, b.Bytes()); err != nil {
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
		if err := writeFile(ctx, dir, e.dumpMeta, b.Bytes()); err != nil {
			return fmt.Errorf("%s: dump_meta_file: %w", e.who(), err)
		}
	}
	return nil
}

// checkDumpPath refuses a dump file name that climbs out of the working
// directory with "..". An absolute path is accepted, as mlos_bench joins
// the name to its temp dir (and os.path.join keeps an absolute path).
func checkDumpPath(name string) error {
	if name == "" || filepath.IsAbs(name) || filepath.IsLocal(filepath.Clean(name)) {
		return nil
	}
	return fmt.Errorf("%q leaves the environment's working directory; give a path inside it, or an absolute path to write elsewhere", name)
}

// writeFile writes a dump file: a relative name under dir, through an
// os.Root on dir, so that a symbolic link a script planted in the working
// directory (kept between trials with temp_dir) cannot redirect it; an
// absolute name (outside dir) to that path, replacing a symbolic link
// found there rather than following it. The file is written to a temporary
// name and renamed, so scripts never see half of it.
func writeFile(ctx context.Context, dir, name string, data []byte) error {
	if filepath.IsAbs(name) {
		rel, err := filepath.Rel(dir, name)
		if err != nil || !filepath.IsLocal(rel) {
			return safefs.WriteFileAt(ctx, name, 0o644, time.Time{}, func(f *os.File) error {
				_, err := f.Write(data)
				return err
			})
		}
		name = rel
	}
	if err := checkDumpPath(name); err != nil {
		return err
	}
	d, err := safefs.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteBytes(ctx, filepath.Clean(name), data, 0o644)
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
