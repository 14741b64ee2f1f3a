package trial

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// leafImports are the only packages of bench's own that trial may import:
// helpers that themselves import only the standard library.
var leafImports = map[string]string{
	"github.com/benchtune/bench/internal/capture": "../internal/capture",
	"github.com/benchtune/bench/internal/suggest": "../internal/suggest",
}

// imports returns the imports of the non-test Go files of dir.
func imports(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[p] = filepath.Base(f)
		}
	}
	return out
}

// stdlib reports whether an import path is the standard library's (no
// dot in its first element).
func stdlib(p string) bool { return !strings.Contains(strings.Split(p, "/")[0], ".") }

// The trial vocabulary (Spec, Runner, the lifecycle decisions) is the leaf
// every layer names (issue 22): trial imports the standard library and
// the leaf helpers above only, so that no layer has to import another to
// name a trial's status, spec or outcome.
func TestTrialIsALeaf(t *testing.T) {
	for p, file := range imports(t, ".") {
		if stdlib(p) {
			continue
		}
		dir, ok := leafImports[p]
		if !ok {
			t.Errorf("%s imports %s: trial must import only the standard library and %v", file, p, leafImports)
			continue
		}
		for q, f := range imports(t, dir) {
			if !stdlib(q) {
				t.Errorf("%s (imported by trial) imports %s in %s: not a leaf", p, q, f)
			}
		}
	}
}
