package configs

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/benchtune/bench/internal/capture"
)

// Redacted replaces a secret value wherever bench writes it.
const Redacted = "[REDACTED]"

// SecretParamsKey is the global (bench extension) that lists more
// parameter names whose values are secret, beyond those IsSecretKey
// recognizes: "secret_params": ["license", "dsn"].
const SecretParamsKey = "secret_params"

// MinSecretLen is the shortest value of a parameter listed in
// "secret_params" that is searched for and replaced inside free text
// (captured output, log lines, error messages): a shorter value ("1",
// "on") would blank out unrelated text. Shorter values of secret
// parameters are still redacted where they are written under their name
// (stored parameters, logged attributes).
const MinSecretLen = 4

// MinGuessedSecretLen is the shortest value of a parameter whose name
// only looks secret (IsSecretKey: *_key, *token*, ...) that is searched
// for in free text. Such a value must also be text that does not read as
// a boolean, a number or null: ssh_insecure_ignore_host_key "true" or
// max_tokens "4096" are settings, not secrets, and replacing every "true"
// in captured output would garble it ("cons[REDACTED]").
const MinGuessedSecretLen = 6

// Secrets holds the parameters that are secret and their values, so that
// everything bench writes (captured output, logs, stored parameters,
// error messages) carries Redacted instead. A parameter is secret when
// IsSecretKey recognizes its name or a config lists it in
// "secret_params". The values still reach scripts unchanged. Secrets
// grows while configs load (globals, then each environment's
// parameters), and is safe for concurrent use. A nil *Secrets redacts
// nothing but names IsSecretKey recognizes.
type Secrets struct {
	mu     sync.RWMutex
	names  map[string]bool
	values []string // longest first, so that a secret containing another is replaced whole
	repl   *strings.Replacer
}

// NewSecrets returns an empty set.
func NewSecrets() *Secrets { return &Secrets{names: map[string]bool{}} }

// MarkNames makes the named parameters secret.
func (s *Secrets) MarkNames(names ...string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			s.names[n] = true
		}
	}
}

// MarkListed marks the names that params lists under "secret_params" (a
// name or a list of names).
func (s *Secrets) MarkListed(params map[string]any) error {
	v, ok := params[SecretParamsKey]
	if !ok || v == nil {
		return nil
	}
	switch x := v.(type) {
	case string:
		s.MarkNames(x)
	case []string:
		s.MarkNames(x...)
	case []any:
		for _, e := range x {
			n, ok := e.(string)
			if !ok {
				return fmt.Errorf("%s: entries must be parameter names, got %v", SecretParamsKey, e)
			}
			s.MarkNames(n)
		}
	default:
		return fmt.Errorf("%s must be a list of parameter names, got %T", SecretParamsKey, v)
	}
	return nil
}

// IsSecret reports whether the parameter or config key name is secret.
func (s *Secrets) IsSecret(name string) bool {
	if IsSecretKey(name) {
		return true
	}
	if s == nil {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.names[name]
}

// AddValue records a secret value to find in free text.
func (s *Secrets) AddValue(v string) {
	if s == nil || len(v) < MinSecretLen || v == Redacted {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.Contains(s.values, v) {
		return
	}
	s.values = append(s.values, v)
	sort.SliceStable(s.values, func(i, j int) bool { return len(s.values[i]) > len(s.values[j]) })
	pairs := make([]string, 0, 2*len(s.values))
	for _, sv := range s.values {
		pairs = append(pairs, sv, Redacted)
	}
	s.repl = strings.NewReplacer(pairs...)
}

// AddParams marks the names params lists in "secret_params", then records
// the values of its secret parameters: text (in lists too), and numbers
// of the parameters "secret_params" lists (a number under a name that
// only looks secret, such as max_tokens, is left alone).
func (s *Secrets) AddParams(params map[string]any) error {
	if s == nil {
		return nil
	}
	err := s.MarkListed(params)
	for k, v := range params {
		if s.IsSecret(k) {
			s.mu.RLock()
			listed := s.names[k]
			s.mu.RUnlock()
			s.addAny(v, listed)
		}
	}
	return err
}

// addAny records the secret values in v. listed: the parameter is named
// in "secret_params" (its numbers and short texts count too); else its
// name only looks secret and only GuessedSecretValue texts count.
func (s *Secrets) addAny(v any, listed bool) {
	switch x := v.(type) {
	case string:
		if listed || GuessedSecretValue(x) {
			s.AddValue(x)
		}
	case int64, int, float64:
		if listed {
			s.AddValue(fmt.Sprint(x))
		}
	case []any:
		for _, e := range x {
			s.addAny(e, listed)
		}
	case []string:
		for _, e := range x {
			s.addAny(e, listed)
		}
	case map[string]any:
		for _, e := range x {
			s.addAny(e, listed)
		}
	}
}

// GuessedSecretValue reports whether v, the text value of a parameter
// whose name only looks secret, is searched for in free text: at least
// MinGuessedSecretLen bytes, and not a boolean, a number or null
// ("true", "False", "4096", "1e6", "None").
func GuessedSecretValue(v string) bool {
	t := strings.TrimSpace(v)
	if len(t) < MinGuessedSecretLen {
		return false
	}
	switch strings.ToLower(t) {
	case "true", "false", "yes", "no", "on", "off", "null", "none":
		return false
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return false
	}
	return true
}

// Redact returns text with every secret value replaced by Redacted.
func (s *Secrets) Redact(text string) string {
	if s == nil || text == "" {
		return text
	}
	s.mu.RLock()
	r, values := s.repl, s.values
	s.mu.RUnlock()
	if r == nil {
		return text
	}
	return redactCuts(r.Replace(text), values)
}

// redactCuts replaces what is left of a secret that bounded output cut in
// two: the end of the text before each marker of omitted output
// (capture.Marker) when it is the start of a secret, and the start of the
// text after it when it is the end of one. Captured output keeps its head
// and its tail, so a secret that straddled a cut would otherwise be
// stored in part.
func redactCuts(text string, values []string) string {
	spans := capture.Markers(text)
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	prev := 0
	for i, sp := range spans {
		head := text[prev:sp[0]]
		if k := longestCut(head, values, true); k > 0 {
			head = head[:len(head)-k] + Redacted
		}
		b.WriteString(head)
		b.WriteString(text[sp[0]:sp[1]])
		prev = sp[1]
		next := len(text)
		if i+1 < len(spans) {
			next = spans[i+1][0]
		}
		if k := longestCut(text[prev:next], values, false); k > 0 {
			b.WriteString(Redacted)
			prev += k
		}
	}
	b.WriteString(text[prev:])
	return b.String()
}

// longestCut returns the length of the longest proper part of a secret
// that seg ends with (atEnd: a secret's start cut off after it) or starts
// with (a secret's end), 0 for none.
func longestCut(seg string, values []string, atEnd bool) int {
	best := 0
	for _, v := range values {
		for k := min(len(v)-1, len(seg)); k > best; k-- {
			if atEnd && strings.HasSuffix(seg, v[:k]) || !atEnd && strings.HasPrefix(seg, v[len(v)-k:]) {
				best = k
				break
			}
		}
	}
	return best
}

// RedactValue returns the value a parameter named name is written with:
// Redacted for a secret parameter, else the value with secret text
// replaced.
func (s *Secrets) RedactValue(name, value string) string {
	if value != "" && s.IsSecret(name) {
		return Redacted
	}
	return s.Redact(value)
}

// RedactParams returns a copy of m with RedactValue applied (nil for nil).
func (s *Secrets) RedactParams(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = s.RedactValue(k, v)
	}
	return out
}

// RedactError returns an error whose message has secret values replaced
// and that still wraps err (nil for nil).
func (s *Secrets) RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := s.Redact(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
