package aws

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/localtree"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/benchtune/bench/internal/safefs"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/services"
)

// S3 class names.
const (
	S3ClassShort = "bench.services.S3FileShareService"
	S3ClassFull  = "bench.services.remote.aws.s3_fileshare.S3FileShareService"
)

// Defaults of the S3 transfer settings.
const (
	DefaultS3PartSizeMB  = 16
	DefaultS3Concurrency = 5
	minS3PartSizeMB      = 5 // S3's smallest multipart part
	mib                  = 1 << 20
)

func init() {
	services.Register(newS3FromSpec, S3ClassShort, S3ClassFull)
}

// S3Config is the config of S3FileShareService.
type S3Config struct {
	CommonConfig
	// Bucket holds the share (required).
	Bucket string `json:"bucket"`
	// Prefix is the key prefix under which the share lives ("" for the
	// whole bucket); remote paths are relative to it and cannot leave it.
	Prefix string `json:"prefix"`
	// UsePathStyle addresses the bucket as endpoint/bucket/key rather than
	// bucket.endpoint/key (needed by most S3-compatible stores and moto).
	UsePathStyle bool `json:"use_path_style"`
	// PartSizeMB is the multipart part size in MiB (at least 5): files
	// larger than this are sent and fetched in parts.
	PartSizeMB *int64 `json:"part_size_mb"`
	// Concurrency is how many parts move at once (at least 1).
	Concurrency *int `json:"concurrency"`
}

// S3FileShareService is a FileShare on an S3 bucket under a key prefix.
// Folders are key prefixes: uploading a folder puts one object per file
// (and an empty "name/" marker object per empty folder), downloading a
// folder fetches every object under "folder/".
type S3FileShareService struct {
	client      *s3.Client
	bucket      string
	prefix      string // no leading or trailing slash
	partSize    int64
	concurrency int
}

var _ services.FileShare = (*S3FileShareService)(nil)

func newS3FromSpec(ctx context.Context, spec services.Spec) (any, error) {
	var c S3Config
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	cref := spec.Ref.Child("config")
	if strings.TrimSpace(c.Bucket) == "" {
		return nil, cref.Child("bucket").Errorf("an S3 bucket name is required")
	}
	if err := c.CommonConfig.validate(); err != nil {
		return nil, cref.Child("endpoint").Errorf("%v", err)
	}
	if c.PartSizeMB != nil && *c.PartSizeMB < minS3PartSizeMB {
		return nil, cref.Child("part_size_mb").Errorf("the part size must be at least %d (MiB), got %d", minS3PartSizeMB, *c.PartSizeMB)
	}
	if c.PartSizeMB != nil && *c.PartSizeMB > 5*1024 {
		return nil, cref.Child("part_size_mb").Errorf("the part size must be at most 5120 (MiB, S3's limit), got %d", *c.PartSizeMB)
	}
	if c.Concurrency != nil && *c.Concurrency < 1 {
		return nil, cref.Child("concurrency").Errorf("the concurrency must be at least 1, got %d", *c.Concurrency)
	}
	if _, err := cleanRemote(c.Prefix); err != nil {
		return nil, cref.Child("prefix").Errorf("%v", err)
	}
	return NewS3FileShareService(ctx, c)
}

// NewS3FileShareService builds the service from a validated config.
// Credentials come from the standard AWS chain.
func NewS3FileShareService(ctx context.Context, c S3Config) (*S3FileShareService, error) {
	prefix, err := cleanRemote(c.Prefix)
	if err != nil {
		return nil, fmt.Errorf("prefix: %w", err)
	}
	cfg, err := loadAWSConfig(ctx, c.CommonConfig)
	if err != nil {
		return nil, err
	}
	s := &S3FileShareService{
		client: s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint = c.endpointPtr()
			o.UsePathStyle = c.UsePathStyle
		}),
		bucket:      c.Bucket,
		prefix:      prefix,
		partSize:    DefaultS3PartSizeMB * mib,
		concurrency: DefaultS3Concurrency,
	}
	if c.PartSizeMB != nil {
		s.partSize = *c.PartSizeMB * mib
	}
	if c.Concurrency != nil {
		s.concurrency = *c.Concurrency
	}
	return s, nil
}

// cleanRemote turns a remote path into a clean slash-separated path
// relative to the share's root ("" for the root). A leading slash means the
// root; "." and empty elements are dropped and ".." climbs one level, but
// never above the root: such a path is an error.
func cleanRemote(p string) (string, error) {
	var parts []string
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "", ".":
		case "..":
			if len(parts) == 0 {
				return "", fmt.Errorf("remote path %q climbs above the share's root with \"..\"", p)
			}
			parts = parts[:len(parts)-1]
		default:
			parts = append(parts, el)
		}
	}
	return strings.Join(parts, "/"), nil
}

// key returns the object key of a clean relative path.
func (s *S3FileShareService) key(rel string) string {
	switch {
	case s.prefix == "":
		return rel
	case rel == "":
		return s.prefix
	default:
		return s.prefix + "/" + rel
	}
}

// folderPrefix returns the key prefix of the objects in a folder.
func (s *S3FileShareService) folderPrefix(rel string) string {
	k := s.key(rel)
	if k == "" {
		return ""
	}
	return k + "/"
}

func (s *S3FileShareService) url(key string) string { return "s3://" + s.bucket + "/" + key }

// Upload copies a local file to the remote path, or a local folder to the
// remote folder (its sub-folders too when recursive). A missing local path
// wraps fs.ErrNotExist.
func (s *S3FileShareService) Upload(ctx context.Context, _ services.Params, localPath, remotePath string, recursive bool) error {
	rel, err := cleanRemote(remotePath)
	if err != nil {
		return fmt.Errorf("S3 upload: %w", err)
	}
	fi, err := os.Stat(localPath)
	if err != nil {
		return fmt.Errorf("S3 upload: %w", err)
	}
	if !fi.IsDir() {
		if rel == "" && s.prefix == "" {
			return fmt.Errorf("S3 upload of %s: the remote path %q names the bucket's root; a file needs a name", localPath, remotePath)
		}
		return s.uploadFile(ctx, localPath, s.key(rel))
	}
	slog.Debug("s3: uploading a folder", "from", localPath, "to", s.url(s.folderPrefix(rel)), "recursive", recursive)
	return localtree.Walk(ctx, localPath, rel, recursive, "S3 upload",
		func(p, subRel string) error {
			empty, err := isEmptyDir(p)
			if err != nil {
				return fmt.Errorf("S3 upload: %w", err)
			}
			if empty && s.folderPrefix(subRel) != "" {
				// S3 has no folders: a zero-byte "name/" object keeps an
				// empty folder, as the S3 console does.
				return s.put(ctx, s.folderPrefix(subRel), strings.NewReader(""))
			}
			return nil
		},
		func(p, subRel string) error { return s.uploadFile(ctx, p, s.key(subRel)) })
}

func isEmptyDir(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.ReadDir(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	return false, err
}

func (s *S3FileShareService) uploadFile(ctx context.Context, localPath, key string) error {
	f, _, err := safeio.Open(localPath, "file to upload") // never a FIFO or a device
	if err != nil {
		return fmt.Errorf("S3 upload: %w", err)
	}
	defer f.Close()
	slog.Debug("s3: upload", "from", localPath, "to", s.url(key))
	return s.put(ctx, key, f)
}

func (s *S3FileShareService) put(ctx context.Context, key string, body io.Reader) error {
	up := manager.NewUploader(s.client, func(u *manager.Uploader) {
		u.PartSize = s.partSize
		u.Concurrency = s.concurrency
	})
	if _, err := up.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(key),
		Body:   body,
	}); err != nil {
		return fmt.Errorf("S3 upload to %s: %w", s.url(key), err)
	}
	return nil
}

// Download copies the remote object to the local path, or every object of
// the remote folder into the local folder (objects in sub-folders too when
// recursive). A remote path that names neither an object nor a non-empty
// folder wraps fs.ErrNotExist. Files are written to a temporary name and
// renamed into place, so a failed download leaves no partial file.
func (s *S3FileShareService) Download(ctx context.Context, _ services.Params, remotePath, localPath string, recursive bool) error {
	rel, err := cleanRemote(remotePath)
	if err != nil {
		return fmt.Errorf("S3 download: %w", err)
	}
	if key := s.key(rel); key != "" {
		_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
		switch {
		case err == nil:
			if fi, err := os.Stat(localPath); err == nil && fi.IsDir() {
				return fmt.Errorf("S3 download of %s: %s is a folder; give the file's path", s.url(key), localPath)
			}
			d, err := safefs.Open(filepath.Dir(localPath))
			if err != nil {
				return fmt.Errorf("S3 download: %w", err)
			}
			defer d.Close()
			return s.downloadFile(ctx, key, d, filepath.Base(localPath))
		case !isNotFound(err):
			return fmt.Errorf("S3 download of %s: %w", s.url(key), err)
		}
	}
	prefix := s.folderPrefix(rel)
	slog.Debug("s3: downloading a folder", "from", s.url(prefix), "to", localPath, "recursive", recursive)
	found := false
	// Every object is written through an os.Root on the destination
	// folder, so a symbolic link inside it cannot send a file elsewhere.
	var dst *safefs.Dir
	defer func() {
		if dst != nil {
			dst.Close()
		}
	}()
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket),
		Prefix: aws.String(prefix),
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("S3 download: listing %s: %w", s.url(prefix), err)
		}
		for _, obj := range page.Contents {
			found = true
			sub := strings.TrimPrefix(aws.ToString(obj.Key), prefix)
			if sub == "" {
				continue // the folder's own marker
			}
			isMarker := strings.HasSuffix(sub, "/")
			sub = strings.TrimSuffix(sub, "/")
			if !recursive && strings.Contains(sub, "/") {
				continue
			}
			localSub := filepath.FromSlash(sub)
			if !filepath.IsLocal(localSub) {
				return fmt.Errorf("S3 download: the key %q would be written outside %s; refusing it", aws.ToString(obj.Key), localPath)
			}
			if dst == nil {
				if dst, err = safefs.Open(localPath); err != nil {
					return fmt.Errorf("S3 download: %w", err)
				}
			}
			if isMarker {
				if err := dst.MkdirAll(localSub); err != nil {
					return fmt.Errorf("S3 download: %w", err)
				}
				continue
			}
			if err := s.downloadFile(ctx, aws.ToString(obj.Key), dst, localSub); err != nil {
				return err
			}
		}
	}
	if !found {
		what := s.url(prefix)
		if rel != "" {
			what = s.url(s.key(rel)) + " (object or folder)"
		}
		return fmt.Errorf("S3 download: %s does not exist: %w", what, fs.ErrNotExist)
	}
	return os.MkdirAll(localPath, 0o755)
}

func isNotFound(err error) bool {
	var nf *s3types.NotFound
	var nk *s3types.NoSuchKey
	if errors.As(err, &nf) || errors.As(err, &nk) {
		return true
	}
	switch apiErrorCode(err) {
	case "NotFound", "NoSuchKey", "404":
		return true
	}
	return false
}

func (s *S3FileShareService) downloadFile(ctx context.Context, key string, d *safefs.Dir, rel string) error {
	slog.Debug("s3: download", "from", s.url(key), "to", d.Join(rel))
	down := manager.NewDownloader(s.client, func(dl *manager.Downloader) {
		dl.PartSize = s.partSize
		dl.Concurrency = s.concurrency
	})
	err := d.WriteFile(ctx, rel, 0o644, time.Time{}, func(f *os.File) error {
		_, err := down.Download(ctx, f, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
		return err
	})
	if err != nil {
		if isNotFound(err) {
			return fmt.Errorf("S3 download: %s does not exist: %w", s.url(key), fs.ErrNotExist)
		}
		return fmt.Errorf("S3 download of %s: %w", s.url(key), err)
	}
	return nil
}
