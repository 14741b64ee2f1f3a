// Package checkpoint names, packs and unpacks the checkpoints that
// multi-fidelity promotion "continue" stages through an object store (the
// fidelity setting checkpoint_store, bench only): a trial's checkpoint
// directory travels as one gzip-compressed tar archive per trial,
// <store>/<experiment_id>/trial-<trial_id>.tar.gz. Unpack is the one place
// an archive read back from the store is written to disk: nothing it holds
// can land outside the fresh directory it is unpacked into.
package checkpoint

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Scheme is the only store scheme: S3 and S3-compatible stores.
const Scheme = "s3://"

var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// ParseStore checks a checkpoint store URL, s3://bucket or
// s3://bucket/prefix, and returns it without a trailing slash. Its errors
// never repeat a value that could hold credentials (anything with '@').
func ParseStore(s string) (string, error) {
	s = strings.TrimSpace(s)
	shown := strconv.Quote(s)
	if strings.ContainsAny(s, "@") {
		shown = "(a URL with '@', not shown: credentials never go in a config; give them to the AWS SDK)"
	}
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return "", fmt.Errorf("want s3://bucket or s3://bucket/prefix, got %s", shown)
	}
	rest = strings.TrimSuffix(rest, "/")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if !bucketName.MatchString(bucket) {
		return "", fmt.Errorf("want s3://bucket/prefix with an S3 bucket name (3 to 63 lowercase letters, digits, '.' and '-'), got %s", shown)
	}
	if strings.ContainsAny(prefix, "?#\\") {
		return "", fmt.Errorf("the prefix of %s may not hold '?', '#' or '\\'", shown)
	}
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "", fmt.Errorf("the prefix of %s has an empty, \".\" or \"..\" segment", shown)
			}
		}
	}
	return Scheme + rest, nil
}

// ErrBadName is wrapped by ObjectURL's errors.
var ErrBadName = errors.New("bad checkpoint object name")

// ObjectURL is the archive of a trial's checkpoint in store (checked by
// ParseStore): <store>/<experiment>/trial-<id>.tar.gz, the experiment id
// escaped as one path segment (never "." or "..", never a '/'), so that no
// experiment id reaches another's objects.
func ObjectURL(store, experimentID string, trialID int) (string, error) {
	s, err := ParseStore(store)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadName, err)
	}
	if experimentID == "" || trialID <= 0 {
		return "", fmt.Errorf("%w: experiment %q, trial %d", ErrBadName, experimentID, trialID)
	}
	seg := url.PathEscape(experimentID)
	switch seg {
	case ".":
		seg = "%2E"
	case "..":
		seg = "%2E%2E"
	}
	return fmt.Sprintf("%s/%s/trial-%d.tar.gz", s, seg, trialID), nil
}
