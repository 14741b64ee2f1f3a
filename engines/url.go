package engines

import (
	"context"
	"fmt"
	"github.com/benchtune/bench/internal/safeio"
	"os"
	"strings"
)

// Store reads and writes request and outcome files that are not local
// paths (s3://bucket/key, ...).
type Store interface {
	Read(ctx context.Context, url string) ([]byte, error)
	Write(ctx context.Context, url string, data []byte) error
}

var stores = map[string]Store{}

// RegisterScheme makes ReadURL and WriteURL handle scheme://... with s.
func RegisterScheme(scheme string, s Store) { stores[scheme] = s }

func storeFor(u string) (Store, bool) {
	scheme, _, ok := strings.Cut(u, "://")
	if !ok {
		return nil, false
	}
	s, ok := stores[scheme]
	return s, ok
}

// ReadURL reads a request or outcome: a local path, env:NAME (the
// variable's value), or a URL of a registered scheme.
func ReadURL(ctx context.Context, u string) ([]byte, error) {
	if name, ok := strings.CutPrefix(u, "env:"); ok {
		v, ok := os.LookupEnv(name)
		if !ok {
			return nil, fmt.Errorf("environment variable %s is not set", name)
		}
		return []byte(v), nil
	}
	if s, ok := storeFor(u); ok {
		return s.Read(ctx, u)
	}
	if strings.Contains(u, "://") {
		return nil, fmt.Errorf("%s: unknown URL scheme", u)
	}
	return safeio.ReadFile(ctx, u, safeio.Limit{What: "file"}, safeio.DefaultDataLimit)
}

// WriteURL writes an outcome: a local path (written to a temporary file
// and renamed, so that a reader never sees half of it) or a URL of a
// registered scheme.
func WriteURL(ctx context.Context, u string, data []byte) error {
	if s, ok := storeFor(u); ok {
		return s.Write(ctx, u, data)
	}
	if strings.Contains(u, "://") || strings.HasPrefix(u, "env:") {
		return fmt.Errorf("%s: cannot write there", u)
	}
	tmp := u + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, u)
}
