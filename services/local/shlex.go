package local

import (
	"fmt"
	"strings"
)

// This file holds a small POSIX shell lexer. LocalExecService uses it only
// to find the command word of each simple command in a script line (so that
// script names can be resolved against the config search path); the line
// itself is handed to the shell unchanged apart from those words, so
// quoting and expansion stay the shell's own business.

type tokKind int

const (
	// tokWord is a word: unquoted text, quoted strings, expansions.
	tokWord tokKind = iota
	// tokOp is a control operator: ; & && || | ( ) ;; and newline.
	tokOp
	// tokRedir is a redirection operator with its optional file
	// descriptor number: < > >> << <<- <& >& <> >| 2> 10>>.
	tokRedir
)

func (k tokKind) String() string {
	switch k {
	case tokWord:
		return "word"
	case tokOp:
		return "op"
	case tokRedir:
		return "redir"
	}
	return fmt.Sprintf("tokKind(%d)", int(k))
}

// token is a lexeme of a shell line, located by byte offsets.
type token struct {
	kind       tokKind
	text       string // the raw text, line[start:end]
	start, end int
	// literal is set for a word made only of plain characters: no quotes,
	// backslashes, $ or ` expansions. Only such words are resolved.
	literal bool
}

// lexError is a line the lexer cannot split (an unterminated quote or
// substitution). The shell reports those itself, so callers leave the line
// as it is.
type lexError struct {
	pos int
	msg string
}

func (e *lexError) Error() string { return fmt.Sprintf("offset %d: %s", e.pos, e.msg) }

type lexer struct {
	s    string
	i    int
	toks []token
	// heredocs waiting for the next newline: their delimiters and whether
	// leading tabs are stripped (<<-).
	heredocs []heredoc
}

type heredoc struct {
	delim     string
	stripTabs bool
}

// lexLine splits a shell line into tokens. Comments and here-document
// bodies are skipped.
func lexLine(s string) ([]token, error) {
	lx := &lexer{s: s}
	if err := lx.run(); err != nil {
		return lx.toks, err
	}
	return lx.toks, nil
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// isMeta reports the characters that end an unquoted word.
func isMeta(c byte) bool {
	switch c {
	case ' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>':
		return true
	}
	return false
}

func (lx *lexer) run() error {
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch {
		case isBlank(c):
			lx.i++
		case c == '\\' && lx.i+1 < len(lx.s) && lx.s[lx.i+1] == '\n':
			// A line continuation between words.
			lx.i += 2
		case c == '#':
			// A comment runs to the end of the line.
			for lx.i < len(lx.s) && lx.s[lx.i] != '\n' {
				lx.i++
			}
		case c == '\n':
			lx.emit(tokOp, lx.i, lx.i+1, false)
			lx.i++
			if err := lx.skipHeredocs(); err != nil {
				return err
			}
		case c == '<' || c == '>':
			lx.redir(lx.i)
		case isMeta(c):
			lx.op()
		default:
			if err := lx.word(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (lx *lexer) emit(kind tokKind, start, end int, literal bool) {
	lx.toks = append(lx.toks, token{kind: kind, text: lx.s[start:end], start: start, end: end, literal: literal})
}

// op reads a control operator at lx.i (not a newline, not a redirection).
func (lx *lexer) op() {
	start := lx.i
	c := lx.s[start]
	n := 1
	if start+1 < len(lx.s) {
		next := lx.s[start+1]
		switch {
		case c == '&' && next == '&', c == '|' && next == '|', c == ';' && next == ';':
			n = 2
		}
	}
	lx.i += n
	lx.emit(tokOp, start, lx.i, false)
}

// redir reads a redirection operator whose '<' or '>' is at lx.i; start is
// where the token begins (earlier when a descriptor number precedes it).
func (lx *lexer) redir(start int) {
	s := lx.s
	i := lx.i
	op := s[i]
	i++
	heredocKind := 0 // 1: <<, 2: <<-
	if i < len(s) {
		switch {
		case op == '<' && s[i] == '<':
			i++
			heredocKind = 1
			if i < len(s) && s[i] == '-' {
				i++
				heredocKind = 2
			}
		case op == '<' && (s[i] == '&' || s[i] == '>'):
			i++
		case op == '>' && (s[i] == '>' || s[i] == '&' || s[i] == '|'):
			i++
		}
	}
	lx.i = i
	lx.emit(tokRedir, start, i, false)
	if heredocKind > 0 {
		// The delimiter is the next word; remember it once it is read.
		lx.heredocs = append(lx.heredocs, heredoc{stripTabs: heredocKind == 2, delim: "\x00pending"})
	}
}

// word reads a word at lx.i, with its quotes and expansions.
func (lx *lexer) word() error {
	start := lx.i
	literal := true
	s := lx.s
	for lx.i < len(s) {
		c := s[lx.i]
		if isMeta(c) {
			break
		}
		switch c {
		case '\\':
			literal = false
			lx.i += 2
			if lx.i > len(s) {
				lx.i = len(s)
			}
		case '\'':
			literal = false
			end := strings.IndexByte(s[lx.i+1:], '\'')
			if end < 0 {
				return &lexError{lx.i, "unterminated single quote"}
			}
			lx.i += end + 2
		case '"':
			literal = false
			if err := lx.doubleQuoted(); err != nil {
				return err
			}
		case '`':
			literal = false
			if err := lx.backquoted(); err != nil {
				return err
			}
		case '$':
			literal = false
			if err := lx.dollar(); err != nil {
				return err
			}
		default:
			lx.i++
		}
	}
	// A word of digits right before '<' or '>' is a descriptor number.
	if lx.i < len(s) && (s[lx.i] == '<' || s[lx.i] == '>') && literal && allDigits(s[start:lx.i]) {
		lx.redir(start)
		return nil
	}
	lx.emit(tokWord, start, lx.i, literal)
	if n := len(lx.heredocs); n > 0 && lx.heredocs[n-1].delim == "\x00pending" {
		lx.heredocs[n-1].delim = unquoteDelim(s[start:lx.i])
	}
	return nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// doubleQuoted skips a "..." string starting at lx.i.
func (lx *lexer) doubleQuoted() error {
	s := lx.s
	open := lx.i
	lx.i++
	for lx.i < len(s) {
		switch s[lx.i] {
		case '"':
			lx.i++
			return nil
		case '\\':
			lx.i += 2
		case '`':
			if err := lx.backquoted(); err != nil {
				return err
			}
		case '$':
			if err := lx.dollar(); err != nil {
				return err
			}
		default:
			lx.i++
		}
	}
	return &lexError{open, "unterminated double quote"}
}

// backquoted skips a `...` command substitution starting at lx.i.
func (lx *lexer) backquoted() error {
	s := lx.s
	open := lx.i
	lx.i++
	for lx.i < len(s) {
		switch s[lx.i] {
		case '`':
			lx.i++
			return nil
		case '\\':
			lx.i += 2
		default:
			lx.i++
		}
	}
	return &lexError{open, "unterminated backquote"}
}

// dollar skips an expansion starting with '$' at lx.i: $name, ${...},
// $(...) or $((...)). A lone '$' is a plain character to the shell.
func (lx *lexer) dollar() error {
	s := lx.s
	open := lx.i
	lx.i++
	if lx.i >= len(s) {
		return nil
	}
	switch s[lx.i] {
	case '{':
		lx.i++
		depth := 1
		for lx.i < len(s) {
			switch s[lx.i] {
			case '}':
				depth--
				lx.i++
				if depth == 0 {
					return nil
				}
			case '{':
				depth++
				lx.i++
			case '\\':
				lx.i += 2
			case '\'':
				end := strings.IndexByte(s[lx.i+1:], '\'')
				if end < 0 {
					return &lexError{lx.i, "unterminated single quote"}
				}
				lx.i += end + 2
			case '"':
				if err := lx.doubleQuoted(); err != nil {
					return err
				}
			case '`':
				if err := lx.backquoted(); err != nil {
					return err
				}
			case '$':
				if err := lx.dollar(); err != nil {
					return err
				}
			default:
				lx.i++
			}
		}
		return &lexError{open, "unterminated ${"}
	case '(':
		// $( ... ) or $(( ... )): lex the inside as shell text until the
		// closing parenthesis that balances the opening one.
		lx.i++
		sub := &lexer{s: s, i: lx.i}
		depth := 1
		for sub.i < len(s) {
			c := s[sub.i]
			switch {
			case isBlank(c) || c == '\n':
				sub.i++
			case c == '\\' && sub.i+1 < len(s) && s[sub.i+1] == '\n':
				sub.i += 2
			case c == '#':
				for sub.i < len(s) && s[sub.i] != '\n' && s[sub.i] != ')' {
					sub.i++
				}
			case c == '(':
				depth++
				sub.i++
			case c == ')':
				depth--
				sub.i++
				if depth == 0 {
					lx.i = sub.i
					return nil
				}
			case c == '<' || c == '>':
				sub.redir(sub.i)
			case isMeta(c):
				sub.op()
			default:
				if err := sub.word(); err != nil {
					return err
				}
			}
		}
		return &lexError{open, "unterminated $("}
	}
	return nil
}

// skipHeredocs skips the bodies of the here-documents opened on the line
// that just ended (lx.i is after its newline).
func (lx *lexer) skipHeredocs() error {
	pending := lx.heredocs
	lx.heredocs = nil
	for _, h := range pending {
		for {
			if lx.i >= len(lx.s) {
				// An unterminated here-document ends at the end of the
				// text, as in the shell (which warns).
				return nil
			}
			end := strings.IndexByte(lx.s[lx.i:], '\n')
			var line string
			if end < 0 {
				line = lx.s[lx.i:]
				lx.i = len(lx.s)
			} else {
				line = lx.s[lx.i : lx.i+end]
				lx.i += end + 1
			}
			if h.stripTabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				break
			}
		}
	}
	return nil
}

// unquoteDelim removes quoting from a here-document delimiter word.
func unquoteDelim(w string) string {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		switch c := w[i]; c {
		case '\'', '"':
		case '\\':
			if i+1 < len(w) {
				i++
				b.WriteByte(w[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Reserved words after which a command word may follow.
var leadingReserved = map[string]bool{
	"!": true, "{": true, "then": true, "do": true, "else": true,
	"elif": true, "if": true, "while": true, "until": true,
}

// Reserved words that end a compound command: what follows them is not a
// command word (only redirections or an operator).
var closingReserved = map[string]bool{"}": true, "fi": true, "done": true, "esac": true}

// Reserved words whose following words are not commands up to the next
// operator (for NAME in WORDS; case WORD in PATTERN)).
var listReserved = map[string]bool{"for": true, "case": true, "select": true}

// isAssignment reports a word of the form NAME=value.
func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	return eq > 0 && isIdentifier(w[:eq])
}

// isIdentifier reports a valid shell variable name.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// commandWords returns the indexes of the tokens that are the command
// names of simple commands: the first word after the start of the line, an
// operator or a reserved word such as `then`, skipping variable
// assignments (A=1 cmd) and redirections with their targets (>out cmd).
func commandWords(toks []token) []int {
	var out []int
	atCmd := true     // the next word may be a command name
	inList := false   // inside `for ... ;` or `case ... )`
	redirArg := false // the next word is a redirection target
	for i, t := range toks {
		switch t.kind {
		case tokOp:
			atCmd, inList, redirArg = true, false, false
		case tokRedir:
			redirArg = true
		case tokWord:
			switch {
			case redirArg:
				redirArg = false
			case !atCmd || inList:
			case isAssignment(t.text):
			case t.literal && leadingReserved[t.text]:
			case t.literal && closingReserved[t.text]:
				atCmd = false
			case t.literal && listReserved[t.text]:
				inList = true
			default:
				out = append(out, i)
				atCmd = false
			}
		}
	}
	return out
}
