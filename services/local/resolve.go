package local

import (
	"bufio"
	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/safeio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// resolver turns script lines into the text /bin/sh -c runs. By default
// it does what mlos_bench's LocalExecService does (mlosText): split the
// line with Python's shlex rules, resolve the first token of each
// sub-command on the config search path, and join the tokens with single
// spaces. With bench_shell_lines "verbatim" (verbatimText) only the
// command words that name script files are replaced, and the rest of the
// line reaches the shell byte for byte.
type resolver struct {
	searchPath []string // absolute folders, in order
	python     string   // interpreter for .py files
}

// text returns the shell text for line.
func (r *resolver) text(line string, verbatim bool) (string, error) {
	if verbatim {
		return r.verbatimText(line), nil
	}
	return r.mlosText(line)
}

// mlosText splits line into tokens (pySplit), replaces the first token of
// each sub-command (subCommands) that names a file, and joins the tokens
// with single spaces, as mlos_bench does on POSIX systems. Quotes are
// gone from the result: the shell expands $x that was in single quotes,
// and splits 'a b' in two. Only the replacements are quoted, when they
// need it.
func (r *resolver) mlosText(line string) (string, error) {
	toks, err := pySplit(line)
	if err != nil {
		return "", splitErrorf(line, err)
	}
	out := make([]string, 0, len(toks)+1)
	for _, sub := range subCommands(toks) {
		if repl, ok := r.mlosCommand(sub[0]); ok {
			out = append(out, repl)
			sub = sub[1:]
		}
		out = append(out, sub...)
	}
	return strings.Join(out, " "), nil
}

// mlosCommand returns the replacement text for the first token of a
// sub-command (whatever it is: a command, an argument after an empty
// token, the target of a redirection), looked up as mlos_bench's config
// loader does: an absolute token as it is; a relative one under each
// search-path folder in turn, where the first folder in which the path
// exists (as a file or a folder) wins, symbolic links resolved; else
// relative to bench's working folder. Only a regular file is replaced.
func (r *resolver) mlosCommand(tok string) (string, bool) {
	if tok == "" {
		return "", false
	}
	var path string
	switch {
	case filepath.IsAbs(tok):
		if !isRegular(tok) {
			return "", false
		}
		path = pyNormAbs(tok)
	default:
		for _, dir := range r.searchPath {
			// Joined without cleaning: ".." applies after the links
			// before it are resolved, as with Python's realpath.
			if p, err := filepath.EvalSymlinks(dir + "/" + tok); err == nil {
				path = p
				break
			}
		}
		if path == "" {
			a, err := filepath.Abs(tok)
			if err != nil {
				return "", false
			}
			path = a
		}
		if !isRegular(path) {
			return "", false
		}
	}
	// The path itself, quoted when the shell would split it (mlos_bench
	// does not quote it), after the interpreter for a .py file. Unlike
	// verbatim lines, a file that is not executable is not run through
	// its #! line: the token may be a redirection's target or a data
	// file, and mlos_bench leaves it to the shell ("Permission denied").
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(path)), ".py") {
		return shellQuote(r.python) + " " + shellQuote(path), true
	}
	return shellQuote(path), true
}

// pyNormAbs cleans an absolute path as Python's os.path.normpath does: it
// keeps a leading "//" (but not "///").
func pyNormAbs(p string) string {
	c := filepath.Clean(p)
	if strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///") {
		return "/" + c
	}
	return c
}

// verbatimText returns line with its resolvable command words replaced. A
// line the lexer cannot split is returned unchanged (the shell will report
// its syntax error).
func (r *resolver) verbatimText(line string) string {
	toks, err := lexLine(line)
	if err != nil {
		return line
	}
	var b strings.Builder
	last := 0
	for _, i := range commandWords(toks) {
		t := toks[i]
		repl, ok := r.command(t)
		if !ok {
			continue
		}
		b.WriteString(line[last:t.start])
		b.WriteString(repl)
		last = t.end
	}
	if last == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}

// unshippedHints returns, for each command word of line that is not found
// on the search path and is one of mlos_bench's built-in scripts that
// bench does not ship, a note saying so and how to get it.
func (r *resolver) unshippedHints(line string) []string {
	toks, err := lexLine(line)
	if err != nil {
		return nil
	}
	var out []string
	for _, i := range commandWords(toks) {
		t := toks[i]
		if !t.literal {
			continue
		}
		if _, found := r.find(t.text); found {
			continue
		}
		if h := configs.UnshippedHint(t.text); h != "" {
			out = append(out, "bench: "+t.text+": "+h)
		}
	}
	return out
}

// missing returns the command words of line that name script files the
// shell will not find: a path (with a slash) found neither as it is (when
// absolute), nor under a search-path folder, nor under the working
// folder; or a bare name ending in .sh or .py found neither there nor on
// PATH. Only plain words count.
func (r *resolver) missing(line string) []string {
	toks, err := lexLine(line)
	if err != nil {
		return nil
	}
	var out []string
	for _, i := range commandWords(toks) {
		t := toks[i]
		w := t.text
		if !t.literal || strings.ContainsAny(w, "*?[]{}~=") {
			continue
		}
		if _, ok := r.find(w); ok || isRegular(w) {
			continue
		}
		switch {
		case strings.Contains(w, "/"):
		case strings.HasSuffix(w, ".sh") || strings.HasSuffix(w, ".py"):
			if _, err := exec.LookPath(w); err == nil {
				continue
			}
		default:
			continue
		}
		out = append(out, w)
	}
	return out
}

// command returns the replacement text for a command word, if it names a
// script file.
func (r *resolver) command(t token) (string, bool) {
	w := t.text
	// Only plain words: a quoted or expanded word is the shell's, and a
	// pattern, a tilde or a brace word means something else to it.
	if !t.literal || strings.ContainsAny(w, "*?[]{}~=") {
		return "", false
	}
	path, ok := r.find(w)
	if !ok {
		return "", false
	}
	return r.scriptText(path, strings.HasSuffix(strings.ToLower(path), ".py"))
}

// scriptText returns the shell text that runs the script file at path:
// python for a .py file, else the file itself when it is executable, else
// its #! interpreter, or /bin/sh when it has none (mlos_bench would run
// it directly, and fail with "Permission denied").
func (r *resolver) scriptText(path string, py bool) (string, bool) {
	if py {
		return shellQuote(r.python) + " " + shellQuote(path), true
	}
	if syscall.Access(path, 1 /* X_OK */) == nil {
		return shellQuote(path), true
	}
	if interp, arg, ok := readShebang(path); ok {
		repl := shellQuote(interp)
		if arg != "" {
			repl += " " + shellQuote(arg)
		}
		return repl + " " + shellQuote(path), true
	}
	return "/bin/sh " + shellQuote(path), true
}

// find looks a command word up: an absolute path as it is, a relative one
// under each search-path folder in turn. Only regular files count.
func (r *resolver) find(w string) (string, bool) {
	if filepath.IsAbs(w) {
		return w, isRegular(w)
	}
	for _, dir := range r.searchPath {
		p := filepath.Join(dir, w)
		if isRegular(p) {
			return p, true
		}
	}
	return "", false
}

func isRegular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// readShebang reads a "#!interpreter [arg]" first line. As on Linux,
// everything after the interpreter is one argument.
func readShebang(path string) (interp, arg string, ok bool) {
	// Never blocks on a FIFO, never reads a device.
	f, _, err := safeio.Open(path, "script")
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 256).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return "", "", false
	}
	s := strings.TrimRight(string(line), "\r\n")
	rest, found := strings.CutPrefix(s, "#!")
	if !found {
		return "", "", false
	}
	rest = strings.Trim(rest, " \t")
	if rest == "" {
		return "", "", false
	}
	interp, arg, _ = strings.Cut(strings.ReplaceAll(rest, "\t", " "), " ")
	return interp, strings.Trim(arg, " "), true
}

// shellQuote quotes s for a POSIX shell: unchanged when it only holds safe
// characters, otherwise in single quotes.
func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-+./:,@%^", c) >= 0) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
