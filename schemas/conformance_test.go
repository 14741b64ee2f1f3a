package schemas

import (
	"errors"
	"github.com/benchtune/bench/internal/testenv"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/configs/source"
)

// The conformance corpus is mlos_bench's own schema test cases
// (mlos_bench/tests/config/schemas/<kind>/test-cases), copied to
// ../shared/conformance/mlos_bench/schema-cases next to the repository.

// caseDirKinds maps the corpus' folder names to our kinds.
var caseDirKinds = map[string]Kind{
	"cli":            CLI,
	"environments":   Environment,
	"globals":        Globals,
	"optimizers":     Optimizer,
	"schedulers":     Scheduler,
	"services":       Service,
	"storage":        Storage,
	"tunable-params": TunableParams,
	"tunable-values": TunableValues,
}

type schemaCase struct {
	kind    Kind
	good    bool
	subtype string // full, partial, invalid, unhandled
	doc     *source.Doc
}

// loadCorpus reads every schema test case, or skips the test when the
// corpus is not there.
func loadCorpus(t testing.TB) []schemaCase {
	t.Helper()
	root := testenv.ConformanceDir(t)
	var cases []schemaCase
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".jsonc") && !strings.HasSuffix(p, ".json") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 {
			t.Fatalf("unexpected case layout: %s", rel)
		}
		kind, ok := caseDirKinds[parts[0]]
		if !ok {
			t.Fatalf("unknown case kind folder %q", parts[0])
		}
		if parts[1] != "good" && parts[1] != "bad" {
			t.Fatalf("unknown case type %q in %s", parts[1], rel)
		}
		doc, err := source.ReadFile(p)
		if err != nil {
			t.Fatalf("parse %s: %v", rel, err)
		}
		cases = append(cases, schemaCase{kind: kind, good: parts[1] == "good", subtype: parts[2], doc: doc})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].doc.File < cases[j].doc.File })
	return cases
}

// extraParamKinds are the kinds whose good cases must reject extra
// properties at the top level and inside "config" (mlos_bench's
// check_test_case_config_with_extra_param). For cli, mlos_bench only checks
// the cli schema, not the unified one.
var extraParamKinds = map[Kind]bool{Environment: true, Optimizer: true, Scheduler: true, Service: true, Storage: true, CLI: true}

// unifiedSkipsBad are the kinds whose bad cases the unified schema cannot
// reject: they are flat maps that another flat kind accepts.
var unifiedSkipsBad = map[Kind]bool{CLI: true, Globals: true, TunableValues: true}

func TestConformance(t *testing.T) {
	cases := loadCorpus(t)
	var good, bad, unifiedGood, unifiedBad, extraOuter, extraConfig int
	for _, tc := range cases {
		name := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(tc.doc.File)))) + "/" + filepath.Base(tc.doc.File)
		err := Validate(tc.kind, tc.doc)
		if tc.good {
			good++
			if err != nil {
				t.Errorf("%s: good case rejected by the %s schema:\n%v", name, tc.kind, err)
			}
			unifiedGood++
			if err := Validate(Unified, tc.doc); err != nil {
				t.Errorf("%s: good case rejected by the unified schema:\n%v", name, err)
			}
			if extraParamKinds[tc.kind] {
				outer, inner := withExtraParams(tc.doc)
				check := []Kind{tc.kind}
				if tc.kind != CLI {
					check = append(check, Unified)
				}
				for _, k := range check {
					if Validate(k, outer) == nil {
						t.Errorf("%s: accepted by the %s schema with an extra top-level property", name, k)
					}
					extraOuter++
					if Validate(k, inner) == nil {
						t.Errorf("%s: accepted by the %s schema with an extra property in config", name, k)
					}
					extraConfig++
				}
			}
			continue
		}
		bad++
		if err == nil {
			t.Errorf("%s: bad case (%s) accepted by the %s schema", name, tc.subtype, tc.kind)
		} else {
			checkProblems(t, name, err)
		}
		if !unifiedSkipsBad[tc.kind] {
			unifiedBad++
			if err := Validate(Unified, tc.doc); err == nil {
				t.Errorf("%s: bad case (%s) accepted by the unified schema", name, tc.subtype)
			} else {
				checkProblems(t, name, err)
			}
		}
	}
	t.Logf("checked %d good and %d bad cases against their kind's schema; %d good and %d bad against the unified schema; %d extra-outer and %d extra-config variants rejected",
		good, bad, unifiedGood, unifiedBad, extraOuter, extraConfig)
	if good != 95 || bad != 174 {
		t.Errorf("corpus has %d good and %d bad cases, want 95 and 174", good, bad)
	}
}

// checkProblems asserts that a rejection is a located *ValidationError.
func checkProblems(t *testing.T, name string, err error) {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) || len(verr.Problems) == 0 {
		t.Errorf("%s: want a *ValidationError with problems, got %T %v", name, err, err)
		return
	}
	for _, p := range verr.Problems {
		if p.File == "" || p.Pos.Line == 0 || p.Msg == "" {
			t.Errorf("%s: problem without file, position or message: %#v", name, p)
		}
	}
}

// withExtraParams returns copies of doc with "extra_outer_attr" added at the
// top level, and with "extra_config_attr" added inside "config" (created
// empty first when it is missing or empty, as mlos_bench's test does).
func withExtraParams(doc *source.Doc) (outer, inner *source.Doc) {
	str := &json5.Node{Kind: json5.String, Str: "should not be here"}
	o := *doc.Root
	o.Members = append(slices.Clone(doc.Root.Members), json5.Member{Key: "extra_outer_attr", Value: str})
	outer = &source.Doc{File: doc.File, Root: &o}

	i := *doc.Root
	i.Members = slices.Clone(doc.Root.Members)
	extra := json5.Member{Key: "extra_config_attr", Value: str}
	idx := slices.IndexFunc(i.Members, func(m json5.Member) bool { return m.Key == "config" })
	switch {
	case idx < 0:
		i.Members = append(i.Members, json5.Member{Key: "config", Value: &json5.Node{Kind: json5.Object, Members: []json5.Member{extra}}})
	case falsy(i.Members[idx].Value):
		i.Members[idx].Value = &json5.Node{Kind: json5.Object, Members: []json5.Member{extra}}
	default:
		cfg := *i.Members[idx].Value
		cfg.Members = append(slices.Clone(cfg.Members), extra)
		i.Members[idx].Value = &cfg
	}
	inner = &source.Doc{File: doc.File, Root: &i}
	return outer, inner
}

// falsy mirrors Python's truthiness for a parsed value.
func falsy(n *json5.Node) bool {
	switch n.Kind {
	case json5.Null:
		return true
	case json5.Bool:
		return !n.Bool
	case json5.Number:
		return n.Float == 0
	case json5.String:
		return n.Str == ""
	case json5.Array:
		return len(n.Elems) == 0
	case json5.Object:
		return len(n.Members) == 0
	}
	return false
}

func BenchmarkValidateCorpus(b *testing.B) {
	cases := loadCorpus(b)
	if _, err := load(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, tc := range cases {
			err := Validate(tc.kind, tc.doc)
			if (err == nil) != tc.good {
				b.Fatalf("%s: unexpected verdict %v", tc.doc.File, err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(cases)), "ns/file")
}

// BenchmarkParseCorpus is the baseline of BenchmarkValidateCorpus: reading
// and parsing the same files as JSON5, without validating them. The ratio
// of the two is what validation adds.
func BenchmarkParseCorpus(b *testing.B) {
	cases := loadCorpus(b)
	files := make([]string, len(cases))
	for i, tc := range cases {
		files[i] = tc.doc.File
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, f := range files {
			if _, err := source.ReadFile(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(files)), "ns/file")
}

// BenchmarkCompileSchemas measures compiling every embedded schema, which
// a process does once (the first validation pays it).
func BenchmarkCompileSchemas(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compileAll(); err != nil {
			b.Fatal(err)
		}
	}
}
