package awsbatch

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/benchtune/bench/engines"
)

// A Batch job's progress comes back through S3 as a sequence of objects
// beside its outcome (engines.ProgressPrefix, written by `bench
// exec-trial`'s engines.ObjectProgressWriter). Each submission has its
// own outcome key (a fresh token), so a relaunched attempt never reads an
// earlier attempt's objects.

// progressObject is one progress object: its key, size and sequence number.
type progressObject struct {
	key  string
	size int64
	seq  int
}

// listProgress lists the progress objects under prefix (bucket, key
// prefix) in sequence order, up to the first gap (an object not yet
// visible: the stream goes on from there at the next read).
func (s *s3Store) listProgress(ctx context.Context, bucket, prefix string) ([]progressObject, error) {
	var objs []progressObject
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("listing s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			rest := strings.TrimPrefix(key, prefix)
			if strings.Contains(rest, "/") {
				continue
			}
			if seq, ok := engines.ProgressObjectSeq(rest); ok {
				objs = append(objs, progressObject{key: key, size: aws.ToInt64(o.Size), seq: seq})
			}
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].seq < objs[j].seq })
	for i, o := range objs {
		if o.seq != i+1 {
			return objs[:i], nil
		}
	}
	return objs, nil
}

// readRange reads at most n bytes of an object from off on.
func (s *s3Store) readRange(ctx context.Context, bucket, key string, off, n int64) ([]byte, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if off > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	}
	// A ranged GET has no whole-object checksum to validate: the SDK
	// need not say so in the log at every poll.
	out, err := s.client.GetObject(ctx, in, func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	if err != nil {
		return nil, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, n))
	if err != nil {
		return nil, fmt.Errorf("reading s3://%s/%s: %w", bucket, key, err)
	}
	return b, nil
}

// readProgress returns the bytes of the progress stream under the outcome
// URL's prefix from offset on (at most about engines.MaxProgressRead):
// the objects wholly before offset are skipped, the one offset falls in
// is read from there (a ranged GET), and the later ones whole.
func (s *s3Store) readProgress(ctx context.Context, outcomeURL string, offset int64) ([]byte, error) {
	prefixURL := engines.ProgressPrefix(outcomeURL)
	if prefixURL == "" {
		return nil, nil
	}
	bucket, key, err := parseS3URL(strings.TrimSuffix(prefixURL, "/"))
	if err != nil {
		return nil, err
	}
	prefix := key + "/"
	objs, err := s.listProgress(ctx, bucket, prefix)
	if err != nil {
		return nil, err
	}
	var out []byte
	pos := int64(0)
	for _, o := range objs {
		end := pos + o.size
		if end <= offset || o.size == 0 {
			pos = end
			continue
		}
		left := int64(engines.MaxProgressRead - len(out))
		if left <= 0 {
			break
		}
		b, err := s.readRange(ctx, bucket, o.key, max(offset-pos, 0), left)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		pos = end
	}
	return out, nil
}

// ReadProgress reads the job's progress objects from offset on (the bytes
// of their concatenation; engines.ProgressReader).
func (e *Engine) ReadProgress(ctx context.Context, rr engines.Ref, offset int64) ([]byte, error) {
	r, err := parseRef(rr)
	if err != nil {
		return nil, err
	}
	if r.OutcomeURL == "" {
		return nil, nil
	}
	b, err := e.s3.readProgress(ctx, r.OutcomeURL, offset)
	if err != nil {
		return nil, fmt.Errorf("aws_batch: reading the progress of job %s: %w", r.JobID, err)
	}
	return b, nil
}

var _ engines.ProgressReader = (*Engine)(nil)
