package awsbatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/benchtune/bench/engines"
)

func init() {
	engines.RegisterScheme("s3", &envStore{})
}

// maxObject bounds what is read back (a request or an outcome with its
// captured output).
const maxObject = 256 << 20

// errNoObject: the object does not exist.
var errNoObject = errors.New("no such object")

// s3Store reads and writes s3://bucket/key URLs with one client.
type s3Store struct {
	client *s3.Client
}

// newS3Client returns an S3 client; with a custom endpoint (ep, or
// AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3 in the config) it addresses
// buckets by path, as S3-compatible stores and moto need.
func newS3Client(cfg aws.Config, ep *string) *s3.Client {
	pathStyle := ep != nil || cfg.BaseEndpoint != nil || os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if ep != nil {
			o.BaseEndpoint = ep
		}
		o.UsePathStyle = pathStyle
	})
}

// parseS3URL splits s3://bucket/key.
func parseS3URL(u string) (bucket, key string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an s3:// URL", u)
	}
	bucket, key, _ = strings.Cut(rest, "/")
	if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return "", "", fmt.Errorf("%q: want s3://bucket/key", u)
	}
	return bucket, key, nil
}

// Read returns an object's bytes.
func (s *s3Store) Read(ctx context.Context, u string) ([]byte, error) {
	b, err := s.read(ctx, u)
	if errors.Is(err, errNoObject) {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return b, err
}

// read is Read with a missing object reported as errNoObject.
func (s *s3Store) read(ctx context.Context, u string) ([]byte, error) {
	bucket, key, err := parseS3URL(u)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return nil, errNoObject
		}
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, maxObject+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", u, err)
	}
	if len(b) > maxObject {
		return nil, fmt.Errorf("reading %s: larger than %d MiB", u, maxObject>>20)
	}
	return b, nil
}

// Write puts an object (S3 makes it visible whole or not at all).
func (s *s3Store) Write(ctx context.Context, u string, data []byte) error {
	bucket, key, err := parseS3URL(u)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		ContentType: aws.String("application/json"),
	})
	if err != nil {
		return fmt.Errorf("writing %s: %w", u, err)
	}
	return nil
}

func isNotFound(err error) bool {
	var nk *s3types.NoSuchKey
	var nf *s3types.NotFound
	if errors.As(err, &nk) || errors.As(err, &nf) {
		return true
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound", "404":
			return true
		}
	}
	return false
}

// envStore is the "s3" scheme of engines.ReadURL and WriteURL: a client
// built on first use from the standard AWS configuration of the process
// (in a Batch container: its job role, AWS_REGION; AWS_ENDPOINT_URL for
// emulators).
type envStore struct {
	mu    sync.Mutex
	store *s3Store
}

// NewEnvStore returns an engines.Store for s3:// URLs that uses the
// standard AWS configuration (what the registered "s3" scheme does).
func NewEnvStore() engines.Store { return &envStore{} }

func (e *envStore) get(ctx context.Context) (*s3Store, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.store != nil {
		return e.store, nil
	}
	cfg, err := loadAWSConfig(ctx, "", "")
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	e.store = &s3Store{client: newS3Client(cfg, nil)}
	return e.store, nil
}

func (e *envStore) Read(ctx context.Context, u string) ([]byte, error) {
	s, err := e.get(ctx)
	if err != nil {
		return nil, err
	}
	return s.Read(ctx, u)
}

func (e *envStore) Write(ctx context.Context, u string, data []byte) error {
	s, err := e.get(ctx)
	if err != nil {
		return err
	}
	return s.Write(ctx, u, data)
}

// ReadProgressObjects reads the progress objects beside an s3:// outcome
// (engines.ProgressObjectReader, for engines.ReadProgressObjects).
func (e *envStore) ReadProgressObjects(ctx context.Context, outcome string, offset int64) ([]byte, error) {
	s, err := e.get(ctx)
	if err != nil {
		return nil, err
	}
	return s.readProgress(ctx, outcome, offset)
}

var _ engines.ProgressObjectReader = (*envStore)(nil)
