package configs

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Redacted replaces a secret value wherever bench writes it.
const Redacted = "[REDACTED]"

// SecretParamsKey is the global (bench extension) that lists more
// parameter names whose values are secret, beyond those IsSecretKey
// recognizes: "secret_params": ["license", "dsn"].
const SecretParamsKey = "secret_params"

// MinSecretLen is the shortest secret value that is searched for and
// replaced inside free text (captured output, log lines, error
// messages): a shorter value ("1", "on") would blank out unrelated text.
// Shorter values of secret parameters are still redacted where they are
// written under their name (stored parameters, logged attributes).
const MinSecretLen = 4

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

func (s *Secrets) addAny(v any, numbers bool) {
	switch x := v.(type) {
	case string:
		s.AddValue(x)
	case int64, int, float64:
		if numbers {
			s.AddValue(fmt.Sprint(x))
		}
	case []any:
		for _, e := range x {
			s.addAny(e, numbers)
		}
	case []string:
		for _, e := range x {
			s.AddValue(e)
		}
	case map[string]any:
		for _, e := range x {
			s.addAny(e, numbers)
		}
	}
}

// Redact returns text with every secret value replaced by Redacted.
func (s *Secrets) Redact(text string) string {
	if s == nil || text == "" {
		return text
	}
	s.mu.RLock()
	r := s.repl
	s.mu.RUnlock()
	if r == nil {
		return text
	}
	return r.Replace(text)
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
