// Package azure implements bench services on Microsoft Azure. It holds
// AzureFileShareService, mlos_bench's FileShare on an Azure Files share.
package azure

import (
	"context"
	"errors"
	"fmt"
	"github.com/benchtune/bench/internal/localtree"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/directory"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/file"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/fileerror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/share"

	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/internal/safefs"
	"github.com/benchtune/bench/internal/safeio"
	"github.com/benchtune/bench/services"
)

// Class names (mlos_bench's).
const (
	FileShareClassShort = "mlos_bench.services.remote.azure.AzureFileShareService"
	FileShareClassFull  = "mlos_bench.services.remote.azure.azure_fileshare.AzureFileShareService"
)

// Transfer settings: Azure Files takes ranges of at most 4 MiB.
const (
	chunkSize   = 4 << 20
	concurrency = 4
)

func init() {
	services.Register(newFileShareFromSpec, FileShareClassShort, FileShareClassFull)
}

// FileShareConfig is the config of AzureFileShareService: mlos_bench's keys
// plus storageSasToken and storageEndpoint (bench extensions).
type FileShareConfig struct {
	// StorageAccountName is the storage account (required, except with a
	// storageEndpoint and no storageAccountKey).
	StorageAccountName string `json:"storageAccountName"`
	// StorageFileShareName is the share (required).
	StorageFileShareName string `json:"storageFileShareName"`
	// StorageAccountKey authenticates with the account key (Shared Key).
	StorageAccountKey string `json:"storageAccountKey"`
	// StorageSasToken authenticates with a SAS token (account SAS or share
	// SAS; the query string, with or without its leading "?").
	StorageSasToken string `json:"storageSasToken"`
	// StorageEndpoint overrides the file service URL, by default
	// https://ACCOUNT.file.core.windows.net (sovereign clouds, private
	// endpoints, test servers).
	StorageEndpoint string `json:"storageEndpoint"`

	// mlos_bench's request settings: requestTimeout bounds each HTTP try,
	// requestTotalRetries the retries, requestBackoffFactor (seconds) the
	// delay between them. pollInterval and pollTimeout are accepted for
	// compatibility; file transfers have no long-running operation to poll.
	PollInterval         *float64 `json:"pollInterval"`
	PollTimeout          *float64 `json:"pollTimeout"`
	RequestTimeout       *float64 `json:"requestTimeout"`
	RequestTotalRetries  *int     `json:"requestTotalRetries"`
	RequestBackoffFactor *float64 `json:"requestBackoffFactor"`
}

// ScopedAuth is an Auth service that can issue tokens for a given scope.
// When the Auth service in the stack implements it, the file share asks for
// a storage token (https://storage.azure.com/.default); otherwise it uses
// AccessToken as it is.
type ScopedAuth interface {
	AccessTokenForScopes(ctx context.Context, scopes []string) (string, time.Time, error)
}

// FileShareService is a FileShare on an Azure Files share. Remote paths are
// relative to the share's root and cannot climb above it.
type FileShareService struct {
	share    *share.Client
	name     string
	authKind string // "shared key", "SAS" or "token" (for messages)
	secrets  []string
	// keyErr is a storageAccountKey that is not base64. As in mlos_bench,
	// whose Azure SDK decodes the key when it signs the first request, it
	// fails the first transfer, not the build (mlos_bench's own tests build
	// its shipped configs with the key "bar").
	keyErr error
}

var _ services.FileShare = (*FileShareService)(nil)

// Options are settings that do not come from a config (for tests).
type Options struct {
	// Transport sends the HTTP requests (default: azcore's).
	Transport policy.Transporter
	// Auth provides tokens when the config has no key and no SAS.
	Auth services.Auth
}

var accountNameRE = regexp.MustCompile(`^[a-z0-9]{3,24}$`)

func newFileShareFromSpec(ctx context.Context, spec services.Spec) (any, error) {
	var c FileShareConfig
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	var opts Options
	if c.StorageAccountKey == "" && c.StorageSasToken == "" {
		auth, ok := services.Find[services.Auth](spec.Parent)
		if !ok {
			return nil, services.NeedsService(spec.Ref.Child("config").Errorf("AzureFileShareService needs credentials: storageAccountKey, storageSasToken, or an authentication service listed before it (e.g. services/remote/azure/service-auth.jsonc)"))
		}
		opts.Auth = auth
	}
	s, err := NewFileShareService(c, opts)
	if err != nil {
		var ce *configError
		if errors.As(err, &ce) {
			return nil, spec.Ref.Child("config").Child(ce.key).Errorf("%s", ce.msg)
		}
		return nil, err
	}
	return s, nil
}

// configError is a problem with one config key.
type configError struct{ key, msg string }

func (e *configError) Error() string { return e.key + ": " + e.msg }

// NewFileShareService builds the service. Nothing is sent until the first
// transfer.
func NewFileShareService(c FileShareConfig, opts Options) (*FileShareService, error) {
	if strings.TrimSpace(c.StorageFileShareName) == "" || strings.ContainsAny(c.StorageFileShareName, "/\\") {
		return nil, &configError{"storageFileShareName", "a share name is required (without slashes)"}
	}
	if c.StorageAccountKey != "" && c.StorageSasToken != "" {
		return nil, &configError{"storageSasToken", "give storageAccountKey or storageSasToken, not both"}
	}
	endpoint := strings.TrimRight(c.StorageEndpoint, "/")
	if endpoint == "" {
		if !accountNameRE.MatchString(c.StorageAccountName) {
			return nil, &configError{"storageAccountName", "a storage account name (3-24 lower-case letters and digits) is required"}
		}
		endpoint = "https://" + c.StorageAccountName + ".file.core.windows.net"
	} else if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, &configError{"storageEndpoint", "must be an http:// or https:// URL without a query"}
	}
	if c.StorageAccountKey != "" && c.StorageAccountName == "" {
		return nil, &configError{"storageAccountName", "the account name is required with storageAccountKey"}
	}
	co := share.ClientOptions{}
	if opts.Transport != nil {
		co.Transport = opts.Transport
	}
	if c.RequestTotalRetries != nil {
		if *c.RequestTotalRetries < 0 {
			return nil, &configError{"requestTotalRetries", "must not be negative"}
		}
		co.Retry.MaxRetries = int32(*c.RequestTotalRetries)
	}
	if c.RequestTimeout != nil {
		d, err := decode.Seconds(*c.RequestTimeout)
		if err != nil || d <= 0 {
			return nil, &configError{"requestTimeout", "must be a positive number of seconds"}
		}
		co.Retry.TryTimeout = d
	}
	if c.RequestBackoffFactor != nil {
		d, err := decode.Seconds(*c.RequestBackoffFactor)
		if err != nil {
			return nil, &configError{"requestBackoffFactor", "must be a non-negative number of seconds"}
		}
		co.Retry.RetryDelay = d
	}
	shareURL := endpoint + "/" + url.PathEscape(c.StorageFileShareName)
	s := &FileShareService{name: c.StorageFileShareName}
	var err error
	switch {
	case c.StorageAccountKey != "":
		s.authKind = "shared key"
		cred, cerr := share.NewSharedKeyCredential(c.StorageAccountName, c.StorageAccountKey)
		if cerr != nil {
			// The SDK's message names no part of the key; keep it out anyway.
			s.keyErr = &configError{"storageAccountKey", "is not a valid account key (base64)"}
			return s, nil
		}
		s.share, err = share.NewClientWithSharedKeyCredential(shareURL, cred, &co)
	case c.StorageSasToken != "":
		sas := strings.TrimPrefix(strings.TrimSpace(c.StorageSasToken), "?")
		q, perr := url.ParseQuery(sas)
		if perr != nil || q.Get("sig") == "" || q.Get("se") == "" {
			return nil, &configError{"storageSasToken", "is not a SAS token (a query string with sig= and se=)"}
		}
		s.authKind = "SAS"
		s.secrets = append(s.secrets, sas, q.Get("sig"), url.QueryEscape(q.Get("sig")))
		s.share, err = share.NewClientWithNoCredential(shareURL+"?"+sas, &co)
	case opts.Auth != nil:
		intent := share.TokenIntentBackup
		co.FileRequestIntent = &intent
		s.authKind = "token"
		s.share, err = share.NewClient(shareURL, tokenCredential{opts.Auth}, &co)
	default:
		return nil, &configError{"storageAccountKey", "no credentials: set storageAccountKey or storageSasToken, or add an authentication service"}
	}
	if err != nil {
		return nil, fmt.Errorf("Azure file share %s: %w", c.StorageFileShareName, s.scrub(err))
	}
	return s, nil
}

// tokenCredential adapts an Auth service to azcore.
type tokenCredential struct{ auth services.Auth }

func (t tokenCredential) GetToken(ctx context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	if sa, ok := t.auth.(ScopedAuth); ok {
		tok, exp, err := sa.AccessTokenForScopes(ctx, o.Scopes)
		return azcore.AccessToken{Token: tok, ExpiresOn: exp}, err
	}
	tok, err := t.auth.AccessToken(ctx)
	// The Auth service caches and renews its token; asking it again on
	// every request (the expiry is within azcore's refresh window) keeps a
	// renewed token in use.
	return azcore.AccessToken{Token: tok, ExpiresOn: time.Now().Add(time.Minute)}, err
}

// decodeConfig decodes the config with errors located at the bad key.
// sigRE finds SAS signatures in URLs that errors may quote.
var sigRE = regexp.MustCompile(`(?i)([?&]sig=)[^&\s"']+`)

// safeError hides SAS secrets from an error's message and shortens the
// SDK's multi-line response errors; it unwraps to the original error.
type safeError struct {
	msg string
	err error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.err }

func (s *FileShareService) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		msg = fmt.Sprintf("Azure Files answered HTTP %d %s", re.StatusCode, re.ErrorCode)
		if re.ErrorCode == string(fileerror.AuthenticationFailed) || re.StatusCode == 403 {
			msg += " (check the " + s.authKind + " credentials)"
		}
	}
	for _, sec := range s.secrets {
		if sec != "" {
			msg = strings.ReplaceAll(msg, sec, "REDACTED")
		}
	}
	msg = sigRE.ReplaceAllString(msg, "${1}REDACTED")
	return &safeError{msg: msg, err: err}
}

// cleanRemote turns a remote path into a clean slash-separated path
// relative to the share's root ("" for the root); backslashes separate too.
// ".." may not climb above the root.
func cleanRemote(p string) (string, error) {
	var parts []string
	for _, el := range strings.Split(strings.ReplaceAll(p, "\\", "/"), "/") {
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

func (s *FileShareService) dirClient(rel string) *directory.Client {
	d := s.share.NewRootDirectoryClient()
	if rel == "" {
		return d
	}
	for _, seg := range strings.Split(rel, "/") {
		d = d.NewSubdirectoryClient(seg)
	}
	return d
}

func (s *FileShareService) fileClient(rel string) *file.Client {
	dir, name := path.Split(rel)
	return s.dirClient(strings.TrimSuffix(dir, "/")).NewFileClient(name)
}

func (s *FileShareService) where(rel string) string { return s.name + ":/" + rel }

// Upload copies a local file to the remote path, or a local folder to the
// remote folder (its sub-folders too when recursive), creating remote
// folders as needed and replacing remote files. A missing local path wraps
// fs.ErrNotExist.
func (s *FileShareService) Upload(ctx context.Context, _ services.Params, localPath, remotePath string, recursive bool) error {
	if s.keyErr != nil {
		return fmt.Errorf("Azure Files upload to %s: %w", s.name, s.keyErr)
	}
	rel, err := cleanRemote(remotePath)
	if err != nil {
		return fmt.Errorf("Azure Files upload: %w", err)
	}
	fi, err := os.Stat(localPath)
	if err != nil {
		return fmt.Errorf("Azure Files upload: %w", err)
	}
	made := map[string]bool{"": true}
	if !fi.IsDir() {
		if rel == "" {
			return fmt.Errorf("Azure Files upload of %s: the remote path %q names the share's root; a file needs a name", localPath, remotePath)
		}
		if err := s.makeDirs(ctx, path.Dir(rel), made); err != nil {
			return err
		}
		return s.uploadFile(ctx, localPath, rel)
	}
	slog.Debug("azure files: uploading a folder", "from", localPath, "to", s.where(rel), "recursive", recursive)
	return localtree.Walk(ctx, localPath, rel, recursive, "Azure Files upload",
		func(_, subRel string) error { return s.makeDirs(ctx, subRel, made) },
		func(p, subRel string) error { return s.uploadFile(ctx, p, subRel) })
}

// makeDirs creates rel and its parents, each one once per transfer; a
// folder that exists already is fine.
func (s *FileShareService) makeDirs(ctx context.Context, rel string, made map[string]bool) error {
	if rel == "." {
		rel = ""
	}
	if made[rel] {
		return nil
	}
	if err := s.makeDirs(ctx, parentOf(rel), made); err != nil {
		return err
	}
	_, err := s.dirClient(rel).Create(ctx, nil)
	if err != nil && !fileerror.HasCode(err, fileerror.ResourceAlreadyExists) {
		return fmt.Errorf("Azure Files: creating folder %s: %w", s.where(rel), s.scrub(err))
	}
	made[rel] = true
	return nil
}

func parentOf(rel string) string {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ""
	}
	return rel[:i]
}

func (s *FileShareService) uploadFile(ctx context.Context, localPath, rel string) error {
	f, _, err := safeio.Open(localPath, "file to upload") // never a FIFO or a device
	if err != nil {
		return fmt.Errorf("Azure Files upload: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("Azure Files upload: %w", err)
	}
	slog.Debug("azure files: upload", "from", localPath, "to", s.where(rel), "bytes", st.Size())
	fc := s.fileClient(rel)
	// Create sets the size (replacing any file there); the ranges follow.
	if _, err := fc.Create(ctx, st.Size(), nil); err != nil {
		return fmt.Errorf("Azure Files: creating %s: %w", s.where(rel), s.scrub(err))
	}
	if st.Size() == 0 {
		return nil
	}
	if err := fc.UploadFile(ctx, f, &file.UploadFileOptions{ChunkSize: chunkSize, Concurrency: concurrency}); err != nil {
		return fmt.Errorf("Azure Files: uploading %s: %w", s.where(rel), s.scrub(err))
	}
	return nil
}

func isMissing(err error) bool {
	return fileerror.HasCode(err, fileerror.ResourceNotFound, fileerror.ParentNotFound, fileerror.ResourceTypeMismatch)
}

// Download copies the remote file to the local path, or the remote folder
// into the local folder (sub-folders too when recursive). A remote path
// that names nothing wraps fs.ErrNotExist. Files are written to a
// temporary name and renamed into place.
func (s *FileShareService) Download(ctx context.Context, _ services.Params, remotePath, localPath string, recursive bool) error {
	if s.keyErr != nil {
		return fmt.Errorf("Azure Files download from %s: %w", s.name, s.keyErr)
	}
	rel, err := cleanRemote(remotePath)
	if err != nil {
		return fmt.Errorf("Azure Files download: %w", err)
	}
	if rel == "" {
		return s.downloadDir(ctx, rel, localPath, recursive)
	}
	_, err = s.dirClient(rel).GetProperties(ctx, nil)
	switch {
	case err == nil:
		return s.downloadDir(ctx, rel, localPath, recursive)
	case fileerror.HasCode(err, fileerror.ShareNotFound):
		return fmt.Errorf("Azure Files download: the share %s does not exist: %w", s.name, fs.ErrNotExist)
	case !isMissing(err):
		return fmt.Errorf("Azure Files download of %s: %w", s.where(rel), s.scrub(err))
	}
	return s.downloadFile(ctx, rel, localPath)
}

func (s *FileShareService) downloadDir(ctx context.Context, rel, localPath string, recursive bool) error {
	slog.Debug("azure files: downloading a folder", "from", s.where(rel), "to", localPath, "recursive", recursive)
	// Every entry is written through an os.Root on the destination folder,
	// so a symbolic link inside it cannot send a file elsewhere.
	d, err := safefs.Open(localPath)
	if err != nil {
		return fmt.Errorf("Azure Files download: %w", err)
	}
	defer d.Close()
	return s.downloadEntries(ctx, rel, d, ".", recursive)
}

func (s *FileShareService) downloadEntries(ctx context.Context, rel string, d *safefs.Dir, lrel string, recursive bool) error {
	if err := d.MkdirAll(lrel); err != nil {
		return fmt.Errorf("Azure Files download: %w", err)
	}
	pager := s.dirClient(rel).NewListFilesAndDirectoriesPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			if isMissing(err) || fileerror.HasCode(err, fileerror.ShareNotFound) {
				return fmt.Errorf("Azure Files download: %s does not exist: %w", s.where(rel), fs.ErrNotExist)
			}
			return fmt.Errorf("Azure Files download: listing %s: %w", s.where(rel), s.scrub(err))
		}
		if page.Segment == nil {
			continue
		}
		type entry struct {
			name string
			dir  bool
		}
		var entries []entry
		for _, d := range page.Segment.Directories {
			if d != nil && d.Name != nil {
				entries = append(entries, entry{*d.Name, true})
			}
		}
		for _, f := range page.Segment.Files {
			if f != nil && f.Name != nil {
				entries = append(entries, entry{*f.Name, false})
			}
		}
		for _, e := range entries {
			if e.name == "" || e.name == "." || e.name == ".." || strings.ContainsAny(e.name, "/\\") || !filepath.IsLocal(e.name) {
				return fmt.Errorf("Azure Files download: the entry %q in %s would be written outside %s; refusing it", e.name, s.where(rel), d.Join(lrel))
			}
			subRel := path.Join(rel, e.name)
			target := filepath.Join(lrel, e.name)
			if e.dir {
				if !recursive {
					continue
				}
				if err := s.downloadEntries(ctx, subRel, d, target, true); err != nil {
					return err
				}
				continue
			}
			if err := s.downloadInto(ctx, subRel, d, target); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *FileShareService) downloadFile(ctx context.Context, rel, localPath string) error {
	if fi, err := os.Stat(localPath); err == nil && fi.IsDir() {
		return fmt.Errorf("Azure Files download of %s: %s is a folder; give the file's path", s.where(rel), localPath)
	}
	// Check first, so that a missing file leaves nothing behind locally.
	if _, err := s.fileClient(rel).GetProperties(ctx, nil); err != nil {
		if isMissing(err) || fileerror.HasCode(err, fileerror.ShareNotFound) {
			return fmt.Errorf("Azure Files download: %s does not exist: %w", s.where(rel), fs.ErrNotExist)
		}
		return fmt.Errorf("Azure Files download of %s: %w", s.where(rel), s.scrub(err))
	}
	d, err := safefs.Open(filepath.Dir(localPath))
	if err != nil {
		return fmt.Errorf("Azure Files download: %w", err)
	}
	defer d.Close()
	return s.downloadInto(ctx, rel, d, filepath.Base(localPath))
}

// downloadInto writes the share's file rel to lrel under d.
func (s *FileShareService) downloadInto(ctx context.Context, rel string, d *safefs.Dir, lrel string) error {
	fc := s.fileClient(rel)
	slog.Debug("azure files: download", "from", s.where(rel), "to", d.Join(lrel))
	err := d.WriteFile(ctx, lrel, 0o644, time.Time{}, func(f *os.File) error {
		_, err := fc.DownloadFile(ctx, f, &file.DownloadFileOptions{ChunkSize: chunkSize, Concurrency: concurrency})
		return err
	})
	if err != nil {
		if isMissing(err) || fileerror.HasCode(err, fileerror.ShareNotFound) {
			return fmt.Errorf("Azure Files download: %s does not exist: %w", s.where(rel), fs.ErrNotExist)
		}
		return fmt.Errorf("Azure Files download of %s: %w", s.where(rel), s.scrub(err))
	}
	return nil
}
