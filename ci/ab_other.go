//go:build !unix

package ci

import (
	"context"
	"errors"
	"time"
)

// measure is not available here: A/B of commands needs process groups
// and resource usage (Linux, macOS, BSD).
func measure(context.Context, string, string, time.Duration) (map[string]float64, error) {
	return nil, errors.New("A/B of commands is only available on Unix systems")
}
