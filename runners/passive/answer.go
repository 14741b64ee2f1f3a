package passive

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/trial"
)

var spacedEquals = regexp.MustCompile(`\s*=\s*`)

// ErrRefused is wrapped by the errors of Parse: the answer is not a result
// bench can store (a value that is not a number, a missing optimization
// target, a malformed word). The trial keeps waiting.
var ErrRefused = errors.New("result refused")

// SkipPrefix starts the failure reason of a trial skipped by hand (stored
// CANCELED: the optimizer never sees it).
const SkipPrefix = "skipped by hand"

// Parse reads a person's answer for a trial:
//
//	score=1.23 latency=4      the results (metric=value, numbers only)
//	fail [reason]             the trial FAILED
//	skip [reason]             the trial is skipped (CANCELED)
//
// Every target of targets must be among the results. Words may be
// separated by spaces or commas. The outcome's time is now.
func Parse(text string, targets trial.Objectives) (trial.Outcome, error) {
	words := strings.Fields(text)
	if len(words) > 0 {
		switch strings.ToLower(words[0]) {
		case "fail", "failed", "fail:", "failed:", "skip", "skipped", "skip:", "skipped:":
		default:
			// "score = 1.2" is score=1.2.
			words = strings.Fields(spacedEquals.ReplaceAllString(text, "="))
		}
	}
	if len(words) == 0 {
		return trial.Outcome{}, fmt.Errorf("%w: the answer is empty: type metric=value pairs (%s), fail [reason] or skip [reason]", ErrRefused, example(targets))
	}
	reason := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), words[0]))
	switch strings.ToLower(words[0]) {
	case "fail", "failed", "fail:", "failed:":
		return Failed(reason), nil
	case "skip", "skipped", "skip:", "skipped:":
		return Skipped(reason), nil
	}
	return Results(words, targets)
}

// Failed is the outcome of a trial marked failed by hand.
func Failed(reason string) trial.Outcome {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "marked failed by hand"
	}
	return trial.Outcome{Status: trial.FAILED, Ts: time.Now().UTC(), FailureReason: reason}
}

// Skipped is the outcome of a trial skipped by hand: CANCELED with the
// reason "skipped by hand: REASON".
func Skipped(reason string) trial.Outcome {
	reason = strings.TrimSpace(reason)
	r := SkipPrefix
	if reason != "" {
		r += ": " + reason
	}
	return trial.Outcome{Status: trial.CANCELED, Ts: time.Now().UTC(), FailureReason: r}
}

// Results reads metric=value words (commas between them are allowed) into
// a successful outcome: every value must be a finite number, every target
// present.
func Results(words []string, targets trial.Objectives) (trial.Outcome, error) {
	res, err := pairs(words, fmt.Sprintf("(e.g. %s), fail [reason] or skip [reason]", example(targets)))
	if err != nil {
		return trial.Outcome{}, err
	}
	for _, t := range targets {
		if _, ok := res[t.Name]; !ok {
			return trial.Outcome{}, fmt.Errorf("%w: the result has no %q, an optimization target (%s to %s); give %s", ErrRefused,
				t.Name, t.Name, direction(t), example(targets))
		}
	}
	if len(res) == 0 {
		return trial.Outcome{}, fmt.Errorf("%w: no metric given (e.g. %s)", ErrRefused, example(targets))
	}
	return trial.Outcome{Status: trial.SUCCEEDED, Ts: time.Now().UTC(), Results: res}, nil
}

// ProgressExample is the shape of a progress report typed at the prompt.
const ProgressExample = "progress 3 loss=0.5"

// ParseProgress reads a progress report typed at the prompt: "progress
// STEP metric=value ...", an intermediate result of the running trial at
// STEP (a whole number >= 0; the values finite numbers, no target
// required). ok is false when text is not a progress report (a result,
// fail or skip: see Parse); err says why a progress report is refused.
func ParseProgress(text string) (p trial.Progress, ok bool, err error) {
	words := strings.Fields(text)
	if len(words) == 0 {
		return p, false, nil
	}
	switch strings.ToLower(words[0]) {
	case "progress", "progress:":
	default:
		return p, false, nil
	}
	words = strings.Fields(spacedEquals.ReplaceAllString(strings.Join(words[1:], " "), "="))
	if len(words) == 0 {
		return p, true, fmt.Errorf("%w: a progress report needs a step and metric=value pairs (e.g. %s)", ErrRefused, ProgressExample)
	}
	step, err := strconv.ParseInt(strings.TrimSuffix(words[0], ":"), 10, 64)
	if err != nil || step < 0 {
		return p, true, fmt.Errorf("%w: the step %q is not a whole number >= 0 (e.g. %s)", ErrRefused, words[0], ProgressExample)
	}
	values, err := ProgressValues(words[1:])
	if err != nil {
		return p, true, err
	}
	return trial.Progress{Step: step, Ts: time.Now().UTC(), Values: values}, true, nil
}

// ProgressValues reads the metric=value words of a progress report
// (commas between them allowed): every value a finite number, at least
// one metric, no target required.
func ProgressValues(words []string) (map[string]any, error) {
	return ProgressValuesLike(words, ProgressExample)
}

// ProgressValuesLike is ProgressValues with another example in its
// messages: bench submit's "--step 3 loss=0.5" instead of the prompt's
// "progress 3 loss=0.5".
func ProgressValuesLike(words []string, example string) (map[string]any, error) {
	res, err := pairs(words, "(e.g. "+example+")")
	if err != nil {
		return nil, err
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("%w: no metric given (e.g. %s)", ErrRefused, example)
	}
	return res, nil
}

// pairs reads metric=value words (commas between them allowed) into
// numbers; shape completes the message for a word that is not one.
func pairs(words []string, shape string) (map[string]any, error) {
	res := map[string]any{}
	for _, w := range words {
		for _, part := range strings.Split(w, ",") {
			if part == "" {
				continue
			}
			name, val, ok := strings.Cut(part, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return nil, fmt.Errorf("%w: %q is not metric=value %s", ErrRefused, part, shape)
			}
			if val == "" {
				return nil, fmt.Errorf("%w: metric %q has no value (write %s=NUMBER)", ErrRefused, name, name)
			}
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%w: metric %q: %q is not a number", ErrRefused, name, val)
			}
			if _, dup := res[name]; dup {
				return nil, fmt.Errorf("%w: metric %q is given twice", ErrRefused, name)
			}
			res[name] = f
		}
	}
	return res, nil
}

func direction(t trial.Objective) string {
	if t.Max {
		return "maximize"
	}
	return "minimize"
}

// example shows the answer the targets need: "score=NUMBER latency=NUMBER".
func example(targets trial.Objectives) string {
	if len(targets) == 0 {
		return "score=1.23"
	}
	parts := make([]string, len(targets))
	for i, t := range targets {
		parts[i] = t.Name + "=NUMBER"
	}
	return strings.Join(parts, " ")
}

// Targets merges objective lists, in order, without duplicates by name:
// the experiment's stored objectives and the optimizer's targets.
func Targets(lists ...trial.Objectives) trial.Objectives {
	var out trial.Objectives
	seen := map[string]bool{}
	for _, l := range lists {
		for _, t := range l {
			if !seen[t.Name] {
				seen[t.Name] = true
				out = append(out, t)
			}
		}
	}
	return out
}
