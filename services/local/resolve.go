package local

import (
	"bufio"
	"github.com/benchtune/bench/internal/safeio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// resolver rewrites the command words of script lines that name script
// files found on the config search path, as mlos_bench's LocalExecService
// does, but without re-joining the line from unquoted tokens: everything
// except the rewritten words reaches the shell byte for byte.
type resolver struct {
	searchPath []string // absolute folders, in order
	python     string   // interpreter for .py files
}

// rewrite returns line with its resolvable command words replaced. A line
// the lexer cannot split is returned unchanged (the shell will report its
// syntax error).
func (r *resolver) rewrite(line string) string {
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

// missing returns the command words of line that name script files the
// shell will not find: a path (with a slash) found neither as it is (when
// absolute) nor under a search-path folder, or a bare name ending in .sh
// or .py found neither there nor on PATH. Only plain words count.
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
		if _, ok := r.find(w); ok {
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
	if strings.HasSuffix(strings.ToLower(path), ".py") {
		return shellQuote(r.python) + " " + shellQuote(path), true
	}
	if syscall.Access(path, 1 /* X_OK */) == nil {
		return shellQuote(path), true
	}
	// Not executable: run it the way the system would if it were, through
	// its #! interpreter, or /bin/sh when it has none.
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
