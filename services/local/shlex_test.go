package local

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// show renders tokens compactly: W:word (literal), w:word (quoted or
// expanded), op:; and r:2>.
func show(toks []token) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		switch t.kind {
		case tokWord:
			if t.literal {
				out[i] = "W:" + t.text
			} else {
				out[i] = "w:" + t.text
			}
		case tokOp:
			out[i] = "op:" + t.text
		case tokRedir:
			out[i] = "r:" + t.text
		}
	}
	return out
}

func TestLexLine(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"", []string{}},
		{"   \t ", []string{}},
		{"echo hello", []string{"W:echo", "W:hello"}},
		{"echo 'a b' \"c d\"", []string{"W:echo", "w:'a b'", `w:"c d"`}},
		{`echo a\ b`, []string{"W:echo", `w:a\ b`}},
		{`echo "a \" b" 'c'"d"e`, []string{"W:echo", `w:"a \" b"`, `w:'c'"d"e`}},
		{`echo 'it'\''s'`, []string{"W:echo", `w:'it'\''s'`}},
		{"a&&b||c;d&e|f", []string{"W:a", "op:&&", "W:b", "op:||", "W:c", "op:;", "W:d", "op:&", "W:e", "op:|", "W:f"}},
		{"(a; b)", []string{"op:(", "W:a", "op:;", "W:b", "op:)"}},
		{"case x in a) b;; esac", []string{"W:case", "W:x", "W:in", "W:a", "op:)", "W:b", "op:;;", "W:esac"}},
		{"cmd >out 2>&1 <in >>app 10<>rw", []string{"W:cmd", "r:>", "W:out", "r:2>&", "W:1", "r:<", "W:in", "r:>>", "W:app", "r:10<>", "W:rw"}},
		{"cmd > out >| clob", []string{"W:cmd", "r:>", "W:out", "r:>|", "W:clob"}},
		{"a2>x", []string{"W:a2", "r:>", "W:x"}},
		{"cmd &>log", []string{"W:cmd", "op:&", "r:>", "W:log"}},
		{"echo $x ${y:-a b} $(c d) $((1+2)) `e f`", []string{"W:echo", "w:$x", "w:${y:-a b}", "w:$(c d)", "w:$((1+2))", "w:`e f`"}},
		{`echo "$(echo ")" ; x)" done`, []string{"W:echo", `w:"$(echo ")" ; x)"`, "W:done"}},
		{"echo $(a $(b) 'c)' \")\")x y", []string{"W:echo", "w:$(a $(b) 'c)' \")\")x", "W:y"}},
		{"echo ${a:-'}'} z", []string{"W:echo", "w:${a:-'}'}", "W:z"}},
		{"A=1 B='x y' cmd arg", []string{"W:A=1", "w:B='x y'", "W:cmd", "W:arg"}},
		{"echo a # a comment; rm -rf /", []string{"W:echo", "W:a"}},
		{"echo a#b", []string{"W:echo", "W:a#b"}},
		{"a\nb", []string{"W:a", "op:\n", "W:b"}},
		{"a \\\n b", []string{"W:a", "W:b"}},
		{"cat <<EOF\nrun.sh x\nEOF\nnext", []string{"W:cat", "r:<<", "W:EOF", "op:\n", "W:next"}},
		{"cat <<-'E F'\n\tbody\n\tE F\nnext", []string{"W:cat", "r:<<-", "w:'E F'", "op:\n", "W:next"}},
		{"echo $", []string{"W:echo", "w:$"}},
		{"echo trailing\\", []string{"W:echo", `w:trailing\`}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.line), func(t *testing.T) {
			toks, err := lexLine(tc.line)
			if err != nil {
				t.Fatalf("lexLine: %v", err)
			}
			got := show(toks)
			if got == nil {
				got = []string{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
			for _, tok := range toks {
				if tc.line[tok.start:tok.end] != tok.text {
					t.Errorf("token %q does not match its offsets %d..%d", tok.text, tok.start, tok.end)
				}
			}
		})
	}
}

func TestLexLineErrors(t *testing.T) {
	for _, line := range []string{
		"echo 'open",
		`echo "open`,
		"echo `open",
		"echo $(open",
		"echo ${open",
		`echo "$(x`,
	} {
		if _, err := lexLine(line); err == nil {
			t.Errorf("lexLine(%q): no error", line)
		}
	}
}

func TestCommandWords(t *testing.T) {
	tests := []struct {
		line string
		want []string
	}{
		{"echo hello", []string{"echo"}},
		{". env.sh && (echo hello && echo world | tee > /tmp/test || echo foo && echo $var; true)",
			[]string{".", "echo", "echo", "tee", "echo", "echo", "true"}},
		{"A=1 B=2 run.sh x", []string{"run.sh"}},
		{"A=1", nil},
		{"> out run.sh x", []string{"run.sh"}},
		{"2>/dev/null run.sh", []string{"run.sh"}},
		{"run.sh > out.sh", []string{"run.sh"}},
		{"cat <<EOF\nfake.sh\nEOF\nreal.sh", []string{"cat", "real.sh"}},
		{"if test -f x; then a.sh; elif b.sh; then c.sh; else d.sh; fi > log", []string{"test", "a.sh", "b.sh", "c.sh", "d.sh"}},
		{"while w.sh; do x.sh; done", []string{"w.sh", "x.sh"}},
		{"until u.sh; do x.sh; done", []string{"u.sh", "x.sh"}},
		{"for f in a.sh b.sh; do echo $f; done", []string{"echo"}},
		{"case $x in a.sh) b.sh;; esac", []string{"b.sh"}},
		{"! neg.sh", []string{"neg.sh"}},
		{"{ a.sh; b.sh; }", []string{"a.sh", "b.sh"}},
		{"x=$(inner.sh) outer.sh", []string{"outer.sh"}},
		{"a.sh & b.sh", []string{"a.sh", "b.sh"}},
		{"echo if then", []string{"echo"}},
		{"'quoted.sh' arg", []string{"'quoted.sh'"}},
		{"a.sh\nb.sh", []string{"a.sh", "b.sh"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.line), func(t *testing.T) {
			toks, err := lexLine(tc.line)
			if err != nil {
				t.Fatalf("lexLine: %v", err)
			}
			var got []string
			for _, i := range commandWords(toks) {
				got = append(got, toks[i].text)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("command words (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIsIdentifier(t *testing.T) {
	for s, want := range map[string]bool{
		"A": true, "_": true, "a_1": true, "ABC_def9": true,
		"": false, "1A": false, "A-B": false, "A B": false, "A.B": false, "é": false, "A=": false,
	} {
		if got := isIdentifier(s); got != want {
			t.Errorf("isIdentifier(%q) = %t, want %t", s, got, want)
		}
	}
}

func FuzzLexLine(f *testing.F) {
	for _, s := range []string{"echo 'a' \"b\" $(c) `d` ${e}", "a && b || c; d | e &", "cat <<EOF\nx\nEOF", "2>&1 A=1 x # c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks, _ := lexLine(s)
		prev := 0
		for _, tok := range toks {
			if tok.start < prev || tok.end < tok.start || tok.end > len(s) || s[tok.start:tok.end] != tok.text {
				t.Fatalf("bad token %+v in %q", tok, s)
			}
			prev = tok.end
		}
		_ = commandWords(toks)
	})
}
