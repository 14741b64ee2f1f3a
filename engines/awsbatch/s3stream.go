package awsbatch

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/benchtune/bench/engines"
)

// Download streams an object to w (engines.StreamStore: checkpoint
// archives, which may be larger than what Read holds in memory).
func (s *s3Store) Download(ctx context.Context, u string, w io.Writer) error {
	bucket, key, err := parseS3URL(u)
	if err != nil {
		return err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)},
		func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true }) // S3-compatible stores send none
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%s: %w", u, engines.ErrNotFound)
		}
		return fmt.Errorf("reading %s: %w", u, err)
	}
	defer out.Body.Close()
	if _, err := io.Copy(w, out.Body); err != nil {
		return fmt.Errorf("reading %s: %w", u, err)
	}
	return nil
}

// Upload puts size bytes of r as an object, in parts when it is large
// (the SDK's upload manager; S3 makes it visible whole or not at all).
func (s *s3Store) Upload(ctx context.Context, u string, r io.ReadSeeker, size int64) error {
	bucket, key, err := parseS3URL(u)
	if err != nil {
		return err
	}
	_, err = manager.NewUploader(s.client).Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key),
		Body: r, ContentType: aws.String("application/gzip"),
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", u, err)
	}
	return nil
}

func (e *envStore) Download(ctx context.Context, u string, w io.Writer) error {
	s, err := e.get(ctx)
	if err != nil {
		return err
	}
	return s.Download(ctx, u, w)
}

func (e *envStore) Upload(ctx context.Context, u string, r io.ReadSeeker, size int64) error {
	s, err := e.get(ctx)
	if err != nil {
		return err
	}
	return s.Upload(ctx, u, r, size)
}

var _ engines.StreamStore = (*envStore)(nil)
