//go:build !linux

package local

import (
	"os"
	"time"
)

// usage is not measured outside Linux (ru_maxrss units differ between
// systems): it returns zeros.
func usage(*os.ProcessState) (user, sys time.Duration, maxRSSBytes int64) { return 0, 0, 0 }
