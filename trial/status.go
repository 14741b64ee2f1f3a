package trial

import (
	"fmt"
	"strconv"
	"strings"
)

// Status is the state of an environment or a trial, with mlos_bench's
// values and names.
type Status int

// The statuses, numbered as in mlos_bench.
const (
	UNKNOWN   Status = 0
	PENDING   Status = 1
	READY     Status = 2
	RUNNING   Status = 3
	SUCCEEDED Status = 4
	CANCELED  Status = 5
	FAILED    Status = 6
	TIMED_OUT Status = 7
)

var statusNames = [...]string{"UNKNOWN", "PENDING", "READY", "RUNNING", "SUCCEEDED", "CANCELED", "FAILED", "TIMED_OUT"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// IsCompleted reports whether s is final: SUCCEEDED, CANCELED, FAILED or
// TIMED_OUT.
func (s Status) IsCompleted() bool {
	return s == SUCCEEDED || s == CANCELED || s == FAILED || s == TIMED_OUT
}

// IsGood reports whether s is one of PENDING, READY, RUNNING, SUCCEEDED:
// the statuses that let a composite environment go on.
func (s Status) IsGood() bool {
	return s == PENDING || s == READY || s == RUNNING || s == SUCCEEDED
}

// IsFailed reports whether s is FAILED or TIMED_OUT.
func (s Status) IsFailed() bool { return s == FAILED || s == TIMED_OUT }

// ParseStatus accepts a name in any case ("succeeded", "TIMED_OUT") or an
// integer string ("4").
func ParseStatus(text string) (Status, error) {
	t := strings.TrimSpace(text)
	if n, err := strconv.Atoi(t); err == nil {
		if n >= 0 && n < len(statusNames) {
			return Status(n), nil
		}
		return UNKNOWN, fmt.Errorf("invalid status %d: want 0..%d", n, len(statusNames)-1)
	}
	up := strings.ToUpper(t)
	if rest, ok := strings.CutPrefix(up, "STATUS."); ok {
		up = rest
	}
	for i, name := range statusNames {
		if up == name {
			return Status(i), nil
		}
	}
	return UNKNOWN, fmt.Errorf("invalid status %q: want one of %s", text, strings.Join(statusNames[:], ", "))
}

// MarshalText writes the status name.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a status name or number.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
