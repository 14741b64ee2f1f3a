package aws

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/testenv"
)

// motoEnv returns the endpoint of the moto server that scripts/testenv/
// moto.sh started, after pointing the standard AWS credential chain at
// static fake credentials and region us-east-1 for this test only (the
// shared config files are moved out of the way, so ~/.aws never matters).
func motoEnv(t *testing.T) string {
	t.Helper()
	ep := testenv.Get(t, "BENCH_TEST_MOTO_ENDPOINT")
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           "AKIDBENCHTEST",
		"AWS_SECRET_ACCESS_KEY":       "bench-test-secret",
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  "us-east-1",
		"AWS_DEFAULT_REGION":          "us-east-1",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_ENDPOINT_URL":            "",
	} {
		t.Setenv(k, v)
	}
	return ep
}

// uniqueName returns prefix followed by random hex (lower case, valid in
// bucket names and tags), so tests sharing one moto server never collide.
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return strings.ToLower(prefix) + hex.EncodeToString(b[:])
}
