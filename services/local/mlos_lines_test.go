package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
)

// mlosLines are script lines with the exact text mlos_bench's
// LocalExecService hands to /bin/sh -c for them when no word names a file
// (Python's shlex.shlex(line, posix=True, punctuation_chars=True) with
// whitespace_split, tokens joined with single spaces), or the message of
// the ValueError shlex raises. The expected values were checked against
// Python 3.11's shlex.
var mlosLines = []struct{ line, want, err string }{
	{"echo hello", "echo hello", ""},
	{"echo 'latency,$latency' >> out.csv", "echo latency,$latency >> out.csv", ""},
	{`echo "a  b"`, "echo a  b", ""},
	{"grep 'a b' file", "grep a b file", ""},
	{"a'b c'd", "ab cd", ""},
	{"echo '' x", "echo  x", ""},
	{`echo ""`, "echo ", ""},
	{"cmd 2>&1", "cmd 2 >& 1", ""},
	{"cmd >/dev/null 2>&1", "cmd > /dev/null 2 >& 1", ""},
	{"a&&b||c;d|e&", "a && b || c ; d | e &", ""},
	{"echo $(date)", "echo $ ( date )", ""},
	{`echo "$(date)"`, "echo $(date)", ""},
	{"echo `date`", "echo `date`", ""},
	{"echo foo#bar", "echo foo", ""},
	{"echo x # comment", "echo x", ""},
	{"echo '#x'", "echo #x", ""},
	{`echo \$HOME`, "echo $HOME", ""},
	{`echo "\$HOME"`, `echo \$HOME`, ""},
	{`echo "a\"b"`, `echo a"b`, ""},
	{`echo "a\\b"`, `echo a\b`, ""},
	{`echo 'a\b'`, `echo a\b`, ""},
	{"x=1; echo $x", "x=1 ; echo $x", ""},
	{`FOO="a b" env`, "FOO=a b env", ""},
	{"echo ~ *.csv ?", "echo ~ *.csv ?", ""},
	{`echo a\ b`, "echo a b", ""},
	{"(cd dir && make)", "( cd dir && make )", ""},
	{"echo ok;", "echo ok ;", ""},
	{"cat<in>out", "cat < in > out", ""},
	{"echo {a,b}", "echo {a,b}", ""},
	{"echo a\nb", "echo a b", ""},
	{`printf '%s\n' x`, `printf %s\n x`, ""},
	{`echo "it's"`, "echo it's", ""},
	{"  ", "", ""},
	{"# only a comment", "", ""},
	{"echo ');'", "echo );", ""},
	{"echo a;;b", "echo a ;; b", ""},
	{"awk '{print $1}' f", "awk {print $1} f", ""},
	{"echo é'ü x'", "echo éü x", ""},
	{`echo a\`, "", "No escaped character"},
	{"echo 'abc", "", "No closing quotation"},
	{`echo "abc`, "", "No closing quotation"},
	{`echo "#"`, "echo #", ""},
	{"echo a>b", "echo a > b", ""},
	{"echo a=b=c", "echo a=b=c", ""},
	{`echo "x"y'z'`, "echo xyz", ""},
	{`echo ''""`, "echo ", ""},
	{`echo \'`, "echo '", ""},
	{"echo\ta", "echo a", ""},
	{"echo a\r", "echo a", ""},
	{"echo a#b'c d'", "echo a", ""},
	{"echo 'a#b'", "echo a#b", ""},
	{"a &>/dev/null", "a &> /dev/null", ""},
	{`echo "a;b"`, "echo a;b", ""},
	{`echo "\\$x"`, `echo \$x`, ""},
	{"echo a\\\nb", "echo a\nb", ""},
	{"echo 'a\nb'", "echo a\nb", ""},
	{"echo a # c1\necho b", "echo a echo b", ""},
	{"echo a;#c\necho b", "echo a ; echo b", ""},
	{"echo ;'' x", "echo ;  x", ""},
	{"''", "", ""},
	{`echo "a'b" 'c"d'`, `echo a'b c"d`, ""},
	{"x=$(echo 'a b')", "x=$ ( echo a b )", ""},
	{"echo ${x:-'d e'}", "echo ${x:-d e}", ""},
	{`echo "${x}"'$y'`, "echo ${x}$y", ""},
	{"echo a|b", "echo a | b", ""},
	{"echo |", "echo |", ""},
	{"|| x", "|| x", ""},
	{`echo \\`, `echo \`, ""},
	{`echo \#x`, "echo #x", ""},
	{`echo "\n"`, `echo \n`, ""},
	{`echo '\''`, "", "No closing quotation"},
	{"echo a'#'b", "echo a#b", ""},
	{`true && echo "ok" > out.txt 2> err.txt`, "true && echo ok > out.txt 2 > err.txt", ""},
}

func TestMlosTextTable(t *testing.T) {
	r := &resolver{searchPath: []string{t.TempDir()}, python: "python3"}
	for _, tc := range mlosLines {
		t.Run(fmt.Sprintf("%q", tc.line), func(t *testing.T) {
			got, err := r.mlosText(tc.line)
			if tc.err != "" {
				var se *pySplitError
				if !errors.As(err, &se) || se.msg != tc.err {
					t.Fatalf("mlosText = %q, %v; want the error %q", got, err, tc.err)
				}
				if !strings.Contains(err.Error(), "Python's shlex") {
					t.Errorf("error %q does not say what failed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("mlosText: %v", err)
			}
			if got != tc.want {
				t.Errorf("mlosText(%q)\n got %q\nwant %q", tc.line, got, tc.want)
			}
		})
	}
}

// mlosResolveFixture builds two search-path folders:
//
//	@D1: scripts/run.sh (executable), tool.py, out.csv, weird.PY
//	     (executable), link.sh -> scripts/run.sh, folders adir and shadow
//	@D2: only2.sh, shadow, scripts/run.sh (all executable)
func mlosResolveFixture(t *testing.T) (d1, d2 string) {
	t.Helper()
	var err error
	// Symbolic links resolved, as the expected paths are.
	if d1, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if d2, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d1, "scripts/run.sh"), "#!/bin/sh\necho run \"$@\"\n", 0o755)
	writeFile(t, filepath.Join(d1, "tool.py"), "print('x')\n", 0o644)
	writeFile(t, filepath.Join(d1, "out.csv"), "", 0o644)
	writeFile(t, filepath.Join(d1, "weird.PY"), "#!/bin/sh\n", 0o755)
	for _, d := range []string{"adir", "shadow"} {
		if err := os.Mkdir(filepath.Join(d1, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("scripts/run.sh", filepath.Join(d1, "link.sh")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"only2.sh", "shadow", "scripts/run.sh"} {
		writeFile(t, filepath.Join(d2, f), "#!/bin/sh\n", 0o755)
	}
	return d1, d2
}

// The first token of each sub-command is resolved as mlos_bench resolves
// it. @D1 and @D2 stand for the folders of mlosResolveFixture; the
// expected values were checked against the same steps in Python (shlex,
// os.path.realpath, os.path.isfile), with python3 for sys.executable.
func TestMlosTextResolves(t *testing.T) {
	d1, d2 := mlosResolveFixture(t)
	r := &resolver{searchPath: []string{d1, d2}, python: "python3"}
	tests := []struct{ line, want string }{
		{`scripts/run.sh 'a  b' "$X"`, "@D1/scripts/run.sh a  b $X"},
		{"tool.py --input 'x y'", "python3 @D1/tool.py --input x y"},
		{"echo x >> out.csv", "echo x >> @D1/out.csv"},
		{"echo out.csv", "echo out.csv"},
		{"cat out.csv | scripts/run.sh", "cat out.csv | @D1/scripts/run.sh"},
		{"A=1 scripts/run.sh", "A=1 scripts/run.sh"},
		{"'scripts/run.sh'", "@D1/scripts/run.sh"},
		{"echo '' out.csv", "echo  @D1/out.csv"},
		{"adir", "adir"},
		{"shadow", "shadow"},
		{"only2.sh && link.sh", "@D2/only2.sh && @D1/scripts/run.sh"},
		{"scripts/../tool.py", "python3 @D1/tool.py"},
		{"missing.sh", "missing.sh"},
		{"scripts/*.sh", "scripts/*.sh"},
		{"@D1/scripts/run.sh x", "@D1/scripts/run.sh x"},
		{"@D1//scripts/./run.sh", "@D1/scripts/run.sh"},
		{"echo x; scripts/run.sh 2>&1", "echo x ; @D1/scripts/run.sh 2 >& 1"},
		{"(scripts/run.sh)", "( @D1/scripts/run.sh )"},
		{"weird.PY", "python3 @D1/weird.PY"},
		{"if scripts/run.sh; then only2.sh; fi", "if scripts/run.sh ; then only2.sh ; fi"},
		{"echo x>out.csv", "echo x > @D1/out.csv"},
		{"./scripts/run.sh", "@D1/scripts/run.sh"},
		{"scripts/run.sh#x", "@D1/scripts/run.sh"},
		{"echo ';' tool.py", "echo ; python3 @D1/tool.py"},
		{`"tool.py"x`, "tool.pyx"},
		{" tool.py", "python3 @D1/tool.py"},
	}
	fill := strings.NewReplacer("@D1", d1, "@D2", d2)
	for _, tc := range tests {
		line, want := fill.Replace(tc.line), fill.Replace(tc.want)
		t.Run(fmt.Sprintf("%q", tc.line), func(t *testing.T) {
			got, err := r.mlosText(line)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("mlosText(%q)\n got %q\nwant %q", line, got, want)
			}
		})
	}
}

// Where bench's text differs from mlos_bench's on purpose: a resolved path
// that the shell would split is quoted, and so is the interpreter of .py
// files. A file that is not executable is left to the shell, as in
// mlos_bench (verbatim lines run it through its #! line).
func TestMlosTextBenchDifferences(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spaced := filepath.Join(dir, "with space")
	writeFile(t, filepath.Join(dir, "noexec.sh"), "#!/bin/bash\necho x\n", 0o644)
	writeFile(t, filepath.Join(dir, "plain.sh"), "echo x\n", 0o644)
	writeFile(t, filepath.Join(spaced, "s.sh"), "#!/bin/sh\n", 0o755)
	r := &resolver{searchPath: []string{dir, spaced}, python: "/opt/my python/bin/python3"}
	writeFile(t, filepath.Join(dir, "t.py"), "", 0o644)
	tests := []struct{ line, want string }{
		{"noexec.sh 'a b'", dir + "/noexec.sh a b"},
		{"plain.sh", dir + "/plain.sh"},
		{"s.sh x", "'" + spaced + "/s.sh' x"},
		{"t.py", "'/opt/my python/bin/python3' " + dir + "/t.py"},
	}
	for _, tc := range tests {
		got, err := r.mlosText(tc.line)
		if err != nil || got != tc.want {
			t.Errorf("mlosText(%q) = %q, %v; want %q", tc.line, got, err, tc.want)
		}
	}
}

func TestSubCommands(t *testing.T) {
	got := subCommands([]string{"a", "b", "&&", "c", "", "d", ">", "e", ";"})
	want := [][]string{{"a", "b"}, {"&&"}, {"c"}, {""}, {"d"}, {">"}, {"e"}, {";"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("subCommands (-want +got):\n%s", diff)
	}
}

// The example: a variable in single quotes expands by default, as
// in mlos_bench, and stays literal with verbatim lines.
func TestLocalExecMlosLines(t *testing.T) {
	svc := newExec(t, DefaultConfig(), testOptions())
	line := "echo 'latency,$latency' >> out.csv"
	for _, tc := range []struct {
		verbatim bool
		want     string
	}{{false, "latency,12.5\n"}, {true, "latency,$latency\n"}} {
		dir := t.TempDir()
		res := run(t, svc, services.ExecRequest{Dir: dir, Lines: []string{line}, Env: map[string]string{"latency": "12.5"}, Verbatim: tc.verbatim})
		if res.ExitCode != 0 {
			t.Fatalf("verbatim=%t: exit %d: %s", tc.verbatim, res.ExitCode, res.Stderr)
		}
		got, err := os.ReadFile(filepath.Join(dir, "out.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("verbatim=%t: out.csv = %q, want %q", tc.verbatim, got, tc.want)
		}
	}
}

// The surprises of the default, run through the shell: what each line
// prints, as mlos_bench runs it.
func TestLocalExecMlosSurprises(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AbortOnError = false
	svc := newExec(t, cfg, testOptions())
	dir := t.TempDir()
	tests := []struct{ line, stdout string }{
		{"echo 'a  b'", "a b\n"},                              // quotes go: the shell splits
		{`echo "'a  b'"`, "a  b\n"},                           // quotes inside quotes reach the shell
		{"echo x # comment", "x\n"},                           // comments go
		{"echo foo#bar", "foo\n"},                             // ... even inside a word
		{"echo '#x'", "\n"},                                   // a quoted # is a comment to the shell
		{"echo a 2>&1", "a 2\n"},                              // 2>&1 becomes "2 >& 1"
		{"echo a '2>&1'", "a\n"},                              // quoted, it reaches the shell whole
		{`echo \$HOME`, os.Getenv("HOME") + "\n"},             // a backslash escape goes too
		{`echo "\$HOME"`, "$HOME\n"},                          // in double quotes it stays
		{"printf '%s\\n' x", "xn"},                            // \n is n to the shell
		{`echo "a;b"`, "a\n"},                                 // the ; runs b
		{"echo 'x\ny'", "x\n"},                                // a quoted newline ends the command
		{"X=1; echo \"$X\"", "1\n"},                           // ; still separates commands
		{`echo "$(echo sub)"`, "sub\n"},                       // $( ) needs quotes
		{"echo `echo back`", "back\n"},                        // backquotes do not
		{"echo 'a\tb'", "a b\n"},                              // a tab is a blank to the shell
		{`echo "a\"b" ; echo ok`, ""},                         // a lone " is a syntax error
		{"echo a\\\nb", "a\n"},                                // an escaped newline ends the command too
		{`A="x y" sh -c 'echo "[$A]"'`, ""},                   // A=x gets the value, y runs
		{`awk 'BEGIN { print "ok" }'`, ""},                    // awk gets broken pieces
		{`awk "'BEGIN { print \"ok\" }'"`, "ok\n"},            // the double-quoting idiom
		{`grep -c "'a b'" /dev/null || true`, "0\n"},          // idem for grep
		{`echo "$(printf '%s' 'a  b')"`, "a b\n"},             // kept inside "$( )", but the result is split
		{`echo $(printf x)`, ""},                              // unquoted $( ) is a syntax error
		{`echo ''; echo "" x`, "\nx\n"},                       // empty words vanish
		{`[ -n "" ] && echo nonempty`, "nonempty\n"},          // ... so tests change meaning
		{`echo é'ü x'`, "éü x\n"},                             // UTF-8 passes through
		{`true && echo "ok" > o.txt 2> e.txt; cat o.txt`, ""}, // 2> e.txt: "2" is an argument
	}
	var lines []string
	for _, tc := range tests {
		lines = append(lines, tc.line)
	}
	res := run(t, svc, services.ExecRequest{Dir: dir, Lines: lines, Env: map[string]string{"HOME": os.Getenv("HOME")}})
	for i, tc := range tests {
		if got := res.Lines[i].Stdout; got != tc.stdout {
			t.Errorf("%q: stdout %q, want %q (stderr %q)", tc.line, got, tc.stdout, res.Lines[i].Stderr)
		}
	}
}

// A line that Python's shlex refuses is an error naming the line, and the
// lines after it do not run.
func TestLocalExecMlosSplitError(t *testing.T) {
	svc := newExec(t, DefaultConfig(), testOptions())
	dir := t.TempDir()
	res, err := svc.LocalExec(context.Background(), services.ExecRequest{Dir: dir, Lines: []string{"echo one", "echo 'it", "touch ran"}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"line 2", `"echo 'it"`, "No closing quotation", "shlex"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if len(res.Lines) != 2 || res.Lines[0].Stdout != "one\n" {
		t.Errorf("lines %+v", res.Lines)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the line after the error ran")
	}
	// Verbatim, the shell reports it.
	res, err = svc.LocalExec(context.Background(), services.ExecRequest{Dir: dir, Lines: []string{"echo 'it"}, Verbatim: true})
	if err != nil || res.ExitCode == 0 {
		t.Errorf("verbatim: exit %d, %v", res.ExitCode, err)
	}
}

// Script names resolve in each sub-command, including after a
// redirection: an existing file on the search path named as the target
// of >> is the one written (as in mlos_bench).
func TestLocalExecMlosSearchPath(t *testing.T) {
	cfgDir := t.TempDir()
	writeFile(t, filepath.Join(cfgDir, "scripts/args.sh"), "#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done; echo\n", 0o755)
	writeFile(t, filepath.Join(cfgDir, "scripts/env.sh"), "#!/bin/sh\necho \"[$V]\"\n", 0o755)
	writeFile(t, filepath.Join(cfgDir, "scripts/noexec.sh"), "#!/bin/sh\necho \"noexec $1 $0\"\n", 0o644)
	writeFile(t, filepath.Join(cfgDir, "scripts/args.py"), "import sys\nprint(''.join('[%s]' % a for a in sys.argv[1:]))\n", 0o644)
	writeFile(t, filepath.Join(cfgDir, "results.csv"), "a\n", 0o644)
	work := t.TempDir()
	cfg := DefaultConfig()
	cfg.AbortOnError = false
	svc := newExec(t, cfg, testOptions(cfgDir))
	lines := []string{
		`scripts/args.sh 'a  b' "$V" e\ f '$V' && echo ok`,
		`'scripts/args.sh' x`,
		// Not the first token of its sub-command: not resolved, and not
		// found from the working directory.
		`V=local scripts/env.sh`,
		`scripts/noexec.sh x`,
		`echo 'x,$V'`,
		`echo appended >> results.csv`,
		`echo created >> new.csv`,
	}
	want := []string{
		"[a][b][v][a][l][e][f][v][a][l]\nok\n",
		"[x]\n",
		"",
		"", // not executable: the shell says "Permission denied"
		"x,v a l\n",
		"",
		"",
	}
	if _, err := exec.LookPath("python3"); err == nil {
		lines = append(lines, `scripts/args.py 'p q' "$V" | cat`)
		want = append(want, "[p][q][v][a][l]\n")
	}
	res := run(t, svc, services.ExecRequest{Dir: work, Env: map[string]string{"V": "v a l"}, Lines: lines})
	if diff := cmp.Diff(want, outputs(res)); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if res.Lines[2].ExitCode != 127 {
		t.Errorf("V=local scripts/env.sh: exit %d, want 127 (not found)", res.Lines[2].ExitCode)
	}
	if res.Lines[3].ExitCode != 126 {
		t.Errorf("scripts/noexec.sh: exit %d, want 126 (not executable)", res.Lines[3].ExitCode)
	}
	for path, want := range map[string]string{
		filepath.Join(cfgDir, "results.csv"): "a\nappended\n",
		filepath.Join(work, "new.csv"):       "created\n",
	} {
		if got, err := os.ReadFile(path); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "results.csv")); err == nil {
		t.Error("results.csv was written in the working directory")
	}
	text, err := svc.ShellText(`echo 'x' >> results.csv`, false)
	if err != nil || text != "echo x >> "+filepath.Join(cfgDir, "results.csv") {
		t.Errorf("ShellText = %q, %v", text, err)
	}
	if text, err := svc.ShellText(`echo 'x' >> results.csv`, true); err != nil || text != `echo 'x' >> results.csv` {
		t.Errorf("ShellText verbatim = %q, %v", text, err)
	}
}

// A fuzz-style check that pySplit never panics and that its tokens
// re-split to themselves when they are plain words.
func FuzzPySplit(f *testing.F) {
	for _, tc := range mlosLines {
		f.Add(tc.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		toks, err := pySplit(line)
		if err != nil {
			return
		}
		for _, tok := range toks {
			if tok == "" || strings.ContainsAny(tok, " \t\r\n'\"\\#();<>|&") {
				continue
			}
			again, err := pySplit(tok)
			if err != nil || len(again) != 1 || again[0] != tok {
				t.Errorf("token %q splits to %q, %v", tok, again, err)
			}
		}
	})
}

// The table of surprises in docs/local-services.md shows, for each line,
// the text the shell runs: it must be what mlosText gives.
func TestMlosTextDocTable(t *testing.T) {
	data, err := os.ReadFile("../../docs/local-services.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "#### The surprises")
	if start < 0 {
		t.Fatal("no table of surprises in docs/local-services.md")
	}
	doc = doc[start:]
	doc = doc[:strings.Index(doc[1:], "\n#### ")+1]
	r := &resolver{searchPath: []string{t.TempDir()}, python: "python3"}
	rows := 0
	for _, row := range strings.Split(doc, "\n") {
		cells := strings.Split(row, " | ")
		if len(cells) < 3 || !strings.HasPrefix(cells[0], "| `") || strings.Contains(cells[0], "⏎") {
			continue
		}
		line := strings.TrimSuffix(strings.TrimPrefix(cells[0], "| `"), "`")
		want := cells[1]
		got, err := r.mlosText(line)
		switch {
		case want == "none":
			if err == nil {
				t.Errorf("%q: split to %q, the docs say it fails", line, got)
			}
		case err != nil:
			t.Errorf("%q: %v", line, err)
		case "`"+got+"`" != want:
			t.Errorf("%q: the shell runs `%s`, the docs say %s", line, got, want)
		}
		rows++
	}
	if rows < 15 {
		t.Errorf("only %d rows found", rows)
	}
}
