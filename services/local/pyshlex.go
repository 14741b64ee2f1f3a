package local

import (
	"fmt"
	"strings"
)

// This file splits script lines the way mlos_bench's LocalExecService does
// before it hands them to the shell: with Python's shlex.shlex in POSIX
// mode, with punctuation_chars=True and whitespace_split=True, and with
// shlex's default comment character '#'. The rules, as Python applies
// them (they are not the shell's):
//
//   - blanks (space, tab, CR, LF) separate tokens; newlines are blanks too;
//   - a run of the characters ( ) ; < > | & is a token of its own, and
//     ends the word before it: "a>b" is "a", ">", "b"; "2>&1" is "2",
//     ">&", "1";
//   - '#' starts a comment up to the end of the line wherever it is not
//     quoted or escaped, even inside a word: "a#b" is "a";
//   - quotes are removed: 'a b' is one token "a b", a'b c'd is "ab cd",
//     and '' is an empty token; nothing inside single quotes is special;
//   - a backslash outside quotes keeps the next character and drops
//     itself; inside double quotes it is dropped only before '"' or '\',
//     otherwise both stay ("\$" stays "\$");
//   - an unterminated quote, or a backslash at the very end, is an error.
//
// Everything else ($, `, ~, *, ?, =, {, }) is part of a word.

// pyPunct are shlex's punctuation characters with punctuation_chars=True.
const pyPunct = "();<>|&"

func pyBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func pyIsPunct(c byte) bool { return strings.IndexByte(pyPunct, c) >= 0 }

// pySplitError is a line that Python's shlex refuses to split; the text is
// the ValueError's message.
type pySplitError struct{ msg string }

func (e *pySplitError) Error() string { return e.msg }

// shlex states.
type pyState int

const (
	pyStBlank  pyState = iota // between tokens (shlex's ' ')
	pyStWord                  // in a word (shlex's 'a')
	pyStPunct                 // in a run of punctuation (shlex's 'c')
	pyStSingle                // inside '...'
	pyStDouble                // inside "..."
	pyStEscape                // after a backslash
)

// pySplit returns the tokens of line. Every byte that is not special to
// shlex is ASCII-free of meaning, so the line is read byte by byte:
// UTF-8 sequences pass through whole.
func pySplit(line string) ([]string, error) {
	var toks []string
	i, n := 0, len(line)
	// readline skips a comment: the rest of the line, its newline
	// included.
	readline := func() {
		for i < n {
			c := line[i]
			i++
			if c == '\n' {
				return
			}
		}
	}
	for {
		var tok strings.Builder
		quoted := false  // the token had quotes: it exists even when empty
		st := pyStBlank  // the state
		back := pyStWord // the state an escape returns to
		atEOF := false
	token:
		for {
			if i >= n {
				switch st {
				case pyStSingle, pyStDouble:
					return toks, &pySplitError{"No closing quotation"}
				case pyStEscape:
					return toks, &pySplitError{"No escaped character"}
				}
				atEOF = true
				break token
			}
			c := line[i]
			i++
			switch st {
			case pyStBlank:
				switch {
				case pyBlank(c):
					if tok.Len() > 0 || quoted {
						break token
					}
				case c == '#':
					readline()
				case c == '\\':
					back, st = pyStWord, pyStEscape
				case pyIsPunct(c):
					tok.WriteByte(c)
					st = pyStPunct
				case c == '\'':
					st = pyStSingle
				case c == '"':
					st = pyStDouble
				default:
					tok.WriteByte(c)
					st = pyStWord
				}
			case pyStSingle, pyStDouble:
				quoted = true
				switch {
				case (c == '\'' && st == pyStSingle) || (c == '"' && st == pyStDouble):
					st = pyStWord
				case c == '\\' && st == pyStDouble:
					back, st = pyStDouble, pyStEscape
				default:
					tok.WriteByte(c)
				}
			case pyStEscape:
				// In double quotes, only '"' and '\' lose their
				// backslash.
				if back == pyStDouble && c != '\\' && c != '"' {
					tok.WriteByte('\\')
				}
				tok.WriteByte(c)
				st = back
			case pyStWord, pyStPunct:
				switch {
				case pyBlank(c):
					st = pyStBlank
					if tok.Len() > 0 || quoted {
						break token
					}
				case c == '#':
					readline()
					st = pyStBlank
					if tok.Len() > 0 || quoted {
						break token
					}
				case st == pyStPunct:
					if pyIsPunct(c) {
						tok.WriteByte(c)
						break
					}
					i-- // read again as the start of the next token
					st = pyStBlank
					break token
				case c == '\'':
					st = pyStSingle
				case c == '"':
					st = pyStDouble
				case c == '\\':
					back, st = pyStWord, pyStEscape
				case !pyIsPunct(c):
					tok.WriteByte(c)
				default:
					// Punctuation ends the word.
					i--
					st = pyStBlank
					if tok.Len() > 0 || quoted {
						break token
					}
				}
			}
		}
		if tok.Len() == 0 && !quoted {
			// Only the end of the line gives an empty unquoted token;
			// shlex reads it as the end.
			return toks, nil
		}
		toks = append(toks, tok.String())
		if atEOF {
			return toks, nil
		}
	}
}

// CheckLine returns the error LocalExec would give for line when it splits
// it into words as mlos_bench does (not for verbatim lines): Python's
// shlex message, "No closing quotation" or "No escaped character", or nil.
// Environments call it to report such a line when their config is loaded.
func CheckLine(line string) error {
	_, err := pySplit(line)
	return err
}

// isSeparator reports a token that mlos_bench takes for a separator
// between sub-commands: one whose first character is a punctuation
// character. The empty token counts too, since Python finds the empty
// string in any string.
func isSeparator(tok string) bool { return tok == "" || pyIsPunct(tok[0]) }

// subCommands groups tokens as mlos_bench does before resolving script
// paths: runs of ordinary tokens, and each separator token on its own.
func subCommands(toks []string) [][]string {
	var out [][]string
	var cur []string
	for _, t := range toks {
		if !isSeparator(t) {
			cur = append(cur, t)
			continue
		}
		if len(cur) > 0 {
			out = append(out, cur)
		}
		out = append(out, []string{t})
		cur = nil
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// splitErrorf wraps a split error with the line it came from.
func splitErrorf(line string, err error) error {
	return fmt.Errorf("cannot split the line %q into words as mlos_bench does (Python's shlex): %w", shortLine(line), err)
}
