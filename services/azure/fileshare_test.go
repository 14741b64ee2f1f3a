package azure

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/share"
	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/internal/azfilesfake"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/sharetest"
)

func newFake(t *testing.T, opts azfilesfake.Options) *azfilesfake.Server {
	t.Helper()
	srv, err := azfilesfake.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.CreateShare("bench-share")
	return srv
}

// newService builds the service through the class registry, as a config
// would; cfg is added to the share name and the fake's endpoint.
func newService(t *testing.T, srv *azfilesfake.Server, cfg map[string]any) *FileShareService {
	t.Helper()
	full := map[string]any{
		"storageAccountName":   srv.Account(),
		"storageFileShareName": "bench-share",
		"storageEndpoint":      srv.Endpoint(),
		"requestTotalRetries":  1,
		"requestBackoffFactor": 0.1,
	}
	for k, v := range cfg {
		full[k] = v
	}
	svc, err := services.New(t.Context(), services.Spec{Class: FileShareClassFull, Config: full})
	if err != nil {
		t.Fatal(err)
	}
	return svc.(*FileShareService)
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeTree(t *testing.T, root string, files map[string][]byte) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			ents, err := os.ReadDir(p)
			if err != nil {
				return err
			}
			if len(ents) == 0 {
				out[rel+"/"] = nil
			}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withPrefix returns the tree with every path under prefix.
func withPrefix(prefix string, tree map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range tree {
		out[prefix+"/"+k] = v
	}
	return out
}

func TestConfigErrors(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"no share", map[string]any{"storageAccountName": "acct", "storageAccountKey": key}, "/config/storageFileShareName: a share name is required"},
		{"share with slash", map[string]any{"storageAccountName": "acct", "storageFileShareName": "a/b", "storageAccountKey": key}, "/config/storageFileShareName:"},
		{"no account", map[string]any{"storageFileShareName": "s", "storageAccountKey": key}, "/config/storageAccountName: a storage account name"},
		{"bad account", map[string]any{"storageAccountName": "Bad.Name", "storageFileShareName": "s", "storageAccountKey": key}, "/config/storageAccountName:"},
		{"key and sas", map[string]any{"storageAccountName": "acct", "storageFileShareName": "s", "storageAccountKey": key, "storageSasToken": "sig=x&se=y"}, "/config/storageSasToken: give storageAccountKey or storageSasToken, not both"},
		{"bad sas", map[string]any{"storageAccountName": "acct", "storageFileShareName": "s", "storageSasToken": "just-a-secret"}, "/config/storageSasToken: is not a SAS token"},
		{"bad endpoint", map[string]any{"storageFileShareName": "s", "storageEndpoint": "localhost:1", "storageSasToken": "sig=x&se=y"}, "/config/storageEndpoint: must be an http:// or https:// URL"},
		{"key without account", map[string]any{"storageFileShareName": "s", "storageEndpoint": "http://127.0.0.1:1/a", "storageAccountKey": key}, "/config/storageAccountName: the account name is required with storageAccountKey"},
		{"no credentials", map[string]any{"storageAccountName": "acct", "storageFileShareName": "s"}, "/config: AzureFileShareService needs credentials"},
		{"unknown key", map[string]any{"storageAccountName": "acct", "storageFileShareName": "s", "storageAccountKey": key, "storageKey": "x"}, `/config/storageKey: unknown config key "storageKey"`},
		{"negative retries", map[string]any{"storageAccountName": "acct", "storageFileShareName": "s", "storageAccountKey": key, "requestTotalRetries": -1}, "/config/requestTotalRetries: must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := services.New(t.Context(), services.Spec{Class: FileShareClassShort, Config: tc.cfg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			for _, secret := range []string{"not base64 secret!", "just-a-secret", key} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error reveals a secret: %v", err)
				}
			}
		})
	}
	t.Run("bad key fails the first transfer", func(t *testing.T) {
		// As in mlos_bench (its SDK decodes the key when it signs a
		// request): the build succeeds, each transfer fails.
		s, err := services.New(t.Context(), services.Spec{Class: FileShareClassShort, Config: map[string]any{
			"storageAccountName": "acct", "storageFileShareName": "s", "storageAccountKey": "not base64 secret!"}})
		if err != nil {
			t.Fatal(err)
		}
		fs := s.(services.FileShare)
		for _, err := range []error{
			fs.Upload(t.Context(), nil, t.TempDir(), "x", true),
			fs.Download(t.Context(), nil, "x", t.TempDir(), true),
		} {
			if err == nil || !strings.Contains(err.Error(), "storageAccountKey: is not a valid account key (base64)") || strings.Contains(err.Error(), "secret!") {
				t.Errorf("error %v", err)
			}
		}
	})
	t.Run("mlos_bench keys accepted", func(t *testing.T) {
		_, err := services.New(t.Context(), services.Spec{Class: FileShareClassShort, Config: map[string]any{
			"storageAccountName": "acct", "storageFileShareName": "s", "storageAccountKey": key,
			"pollInterval": 4, "pollTimeout": 300, "requestTimeout": 5, "requestTotalRetries": 10, "requestBackoffFactor": 0.3,
		}})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestSharedKeyRoundTrips(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	s := newService(t, srv, map[string]any{"storageAccountKey": srv.Key()})
	ctx := t.Context()
	tree := map[string][]byte{
		"top.txt":                []byte("top\n"),
		"empty.bin":              {},
		"binary.dat":             randomBytes(t, 70000),
		"sub/a.csv":              []byte("x,y\n1,2\n"),
		"sub/deeper/b.json":      []byte(`{"k": "v"}`),
		"sub/with space/ü ñ.txt": []byte("unicode names\n"),
		"emptydir/":              nil,
		"sub/deeper/also-empty/": nil,
	}
	src := t.TempDir()
	writeTree(t, src, tree)

	// Upload into a folder whose parents do not exist yet.
	if err := s.Upload(ctx, nil, src, `exp\42/./run`, true); err != nil {
		t.Fatal(err)
	}
	got, _ := srv.Tree("bench-share")
	if diff := cmp.Diff(withPrefix("exp/42/run", tree), got); diff != "" {
		t.Errorf("share content (-want +got):\n%s", diff)
	}

	t.Run("recursive download", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "new", "dir")
		if err := s.Download(ctx, nil, "/exp/42/run/", dst, true); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tree, readTree(t, dst)); diff != "" {
			t.Errorf("downloaded tree (-want +got):\n%s", diff)
		}
	})
	t.Run("non-recursive download", func(t *testing.T) {
		dst := t.TempDir()
		if err := s.Download(ctx, nil, "exp/42/run", dst, false); err != nil {
			t.Fatal(err)
		}
		want := map[string][]byte{"top.txt": tree["top.txt"], "empty.bin": {}, "binary.dat": tree["binary.dat"]}
		if diff := cmp.Diff(want, readTree(t, dst)); diff != "" {
			t.Errorf("downloaded tree (-want +got):\n%s", diff)
		}
	})
	t.Run("whole share", func(t *testing.T) {
		dst := t.TempDir()
		if err := s.Download(ctx, nil, "", dst, true); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(withPrefix("exp/42/run", tree), readTree(t, dst)); diff != "" {
			t.Errorf("downloaded tree (-want +got):\n%s", diff)
		}
	})
	t.Run("non-recursive upload", func(t *testing.T) {
		if err := s.Upload(ctx, nil, src, "flat", false); err != nil {
			t.Fatal(err)
		}
		got, _ := srv.Tree("bench-share")
		want := map[string][]byte{"flat/top.txt": tree["top.txt"], "flat/empty.bin": {}, "flat/binary.dat": tree["binary.dat"]}
		for k := range got {
			if !strings.HasPrefix(k, "flat/") {
				delete(got, k)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("share content (-want +got):\n%s", diff)
		}
	})
	t.Run("single file, overwritten", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "f.bin")
		for i, size := range []int{3000, 10, 0, 5000} {
			data := randomBytes(t, size)
			if err := os.WriteFile(f, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := s.Upload(ctx, nil, f, "files/a/b/f.bin", false); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "x", "f.out")
			if err := s.Download(ctx, nil, "files/a/b/f.bin", out, false); err != nil {
				t.Fatal(err)
			}
			back, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, data) {
				t.Fatalf("round %d: %d bytes came back for %d sent, or other bytes", i, len(back), len(data))
			}
			if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
				t.Errorf("the download left %d entries in its folder, want only the file", len(ents))
			}
		}
	})
}

func TestLargeFileUsesRanges(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	s := newService(t, srv, map[string]any{"storageAccountKey": srv.Key()})
	ctx := t.Context()
	data := randomBytes(t, 9<<20+123) // three 4 MiB ranges
	f := filepath.Join(t.TempDir(), "large.bin")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := srv.Ops()
	if err := s.Upload(ctx, nil, f, "large.bin", false); err != nil {
		t.Fatal(err)
	}
	if n := srv.Ops()["PutRange"] - before["PutRange"]; n != 3 {
		t.Errorf("PutRange calls = %d, want 3", n)
	}
	out := filepath.Join(t.TempDir(), "large.out")
	if err := s.Download(ctx, nil, "large.bin", out, false); err != nil {
		t.Fatal(err)
	}
	if n := srv.Ops()["GetFile"] - before["GetFile"]; n != 3 {
		t.Errorf("ranged GetFile calls = %d, want 3", n)
	}
	back, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("downloaded %d bytes that differ from the %d uploaded", len(back), len(data))
	}
}

func TestMissingAndEscapes(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	s := newService(t, srv, map[string]any{"storageAccountKey": srv.Key()})
	ctx := t.Context()
	dir := t.TempDir()
	f := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(ctx, nil, f, "present/f.txt", false); err != nil {
		t.Fatal(err)
	}
	for _, remote := range []string{"absent.txt", "absent/dir/x", "present/f.txt/more", "present/g.txt"} {
		out := filepath.Join(dir, "out")
		err := s.Download(ctx, nil, remote, out, true)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Download(%q) error = %v, want fs.ErrNotExist", remote, err)
		}
		if _, serr := os.Stat(out); !errors.Is(serr, fs.ErrNotExist) {
			t.Errorf("Download(%q) created its target", remote)
		}
	}
	other := newService(t, srv, map[string]any{"storageAccountKey": srv.Key(), "storageFileShareName": "no-such-share"})
	if err := other.Download(ctx, nil, "x", filepath.Join(dir, "o"), false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing share: error = %v, want fs.ErrNotExist", err)
	}
	if err := s.Upload(ctx, nil, filepath.Join(dir, "nope"), "x", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing local source: error = %v, want fs.ErrNotExist", err)
	}
	for _, remote := range []string{"../x", `a\..\..\x`, "/../../etc"} {
		if err := s.Upload(ctx, nil, f, remote, false); err == nil || !strings.Contains(err.Error(), "climbs above the share's root") {
			t.Errorf("Upload(%q) error = %v, want a refusal", remote, err)
		}
		if err := s.Download(ctx, nil, remote, filepath.Join(dir, "o"), false); err == nil || !strings.Contains(err.Error(), "climbs above the share's root") {
			t.Errorf("Download(%q) error = %v, want a refusal", remote, err)
		}
	}
	if err := s.Upload(ctx, nil, f, "", false); err == nil || !strings.Contains(err.Error(), "a file needs a name") {
		t.Errorf("Upload to the root: error = %v", err)
	}
}

func TestWrongKeyIsRefused(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	wrong := base64.StdEncoding.EncodeToString(randomBytes(t, 64))
	s := newService(t, srv, map[string]any{"storageAccountKey": wrong})
	f := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := s.Upload(t.Context(), nil, f, "d/f.txt", false)
	if err == nil || !strings.Contains(err.Error(), "HTTP 403 AuthenticationFailed (check the shared key credentials)") {
		t.Fatalf("error = %v, want a 403 AuthenticationFailed", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), srv.Key()) {
		t.Errorf("the error reveals a key: %v", err)
	}
	err = s.Download(t.Context(), nil, "d/f.txt", filepath.Join(t.TempDir(), "o"), false)
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "AuthenticationFailed") {
		t.Fatalf("download error = %v, want AuthenticationFailed (not 'does not exist')", err)
	}
	if tree, _ := srv.Tree("bench-share"); len(tree) != 0 {
		t.Errorf("a refused upload changed the share: %v", tree)
	}
}

func TestSAS(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	cred, err := share.NewSharedKeyCredential(srv.Account(), srv.Key())
	if err != nil {
		t.Fatal(err)
	}
	token := func(perms sas.SharePermissions) string {
		qp, err := sas.SignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), Permissions: perms.String(), ShareName: "bench-share",
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}
	ctx := t.Context()
	tree := map[string][]byte{"a.txt": []byte("a"), "d/b.txt": randomBytes(t, 5000), "d/e/": nil}
	src := t.TempDir()
	writeTree(t, src, tree)

	rw := newService(t, srv, map[string]any{"storageSasToken": "?" + token(sas.SharePermissions{Read: true, Create: true, Write: true, List: true}), "storageAccountName": ""})
	if err := rw.Upload(ctx, nil, src, "sas", true); err != nil {
		t.Fatal(err)
	}
	ro := token(sas.SharePermissions{Read: true, List: true})
	r := newService(t, srv, map[string]any{"storageSasToken": ro})
	dst := t.TempDir()
	if err := r.Download(ctx, nil, "sas", dst, true); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tree, readTree(t, dst)); diff != "" {
		t.Errorf("downloaded tree (-want +got):\n%s", diff)
	}
	err = r.Upload(ctx, nil, src, "sas2", true)
	if err == nil || !strings.Contains(err.Error(), "AuthorizationPermissionMismatch") {
		t.Fatalf("upload with a read-only SAS: error = %v, want AuthorizationPermissionMismatch", err)
	}
	sig := ""
	for _, kv := range strings.Split(ro, "&") {
		if v, ok := strings.CutPrefix(kv, "sig="); ok {
			sig = v
		}
	}
	if sig == "" || strings.Contains(err.Error(), sig) {
		t.Errorf("the error reveals the SAS signature: %v", err)
	}

	// A SAS signed with another key is refused.
	otherCred, _ := share.NewSharedKeyCredential(srv.Account(), base64.StdEncoding.EncodeToString(randomBytes(t, 64)))
	qp, err := sas.SignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), Permissions: "rl", ShareName: "bench-share"}.SignWithSharedKey(otherCred)
	if err != nil {
		t.Fatal(err)
	}
	forged := newService(t, srv, map[string]any{"storageSasToken": qp.Encode()})
	if err := forged.Download(ctx, nil, "sas", t.TempDir(), true); err == nil || !strings.Contains(err.Error(), "AuthenticationFailed (check the SAS credentials)") {
		t.Fatalf("forged SAS: error = %v", err)
	}
}

// fakeAuth is an Auth service handing out a fixed token.
type fakeAuth struct{ token string }

func (a fakeAuth) AccessToken(context.Context) (string, error) { return a.token, nil }

func TestTokenFromAuthService(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{Token: "storage-token", TLS: true})
	ctx := t.Context()

	// Through the registry: the Auth service below is found and used.
	svc, err := services.New(ctx, services.Spec{
		Class:  FileShareClassShort,
		Config: map[string]any{"storageAccountName": srv.Account(), "storageFileShareName": "bench-share"},
		Parent: services.NewStack(fakeAuth{"storage-token"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := svc.(*FileShareService).authKind; got != "token" {
		t.Errorf("auth = %s, want token", got)
	}

	// Against the (TLS) fake, which checks the token and the backup intent.
	cfg := FileShareConfig{StorageAccountName: srv.Account(), StorageFileShareName: "bench-share", StorageEndpoint: srv.Endpoint()}
	f := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(f, []byte("via token"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token   string
		wantErr bool
	}{{"storage-token", false}, {"other-token", true}} {
		s, err := NewFileShareService(cfg, Options{Transport: srv.Client(), Auth: fakeAuth{tc.token}})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Upload(ctx, nil, f, "t/f.txt", false)
		if (err != nil) != tc.wantErr {
			t.Errorf("token %s: error = %v, want error %v", tc.token, err, tc.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), tc.token) {
			t.Errorf("the error reveals the token: %v", err)
		}
	}
	got, _ := srv.Tree("bench-share")
	if diff := cmp.Diff(map[string][]byte{"t/f.txt": []byte("via token")}, got); diff != "" {
		t.Errorf("share content (-want +got):\n%s", diff)
	}
}

// TestFileShareSuite runs the suite every file share runs against the
// Azure Files fake, each case on a fresh server.
func TestFileShareSuite(t *testing.T) {
	sharetest.Run(t, sharetest.Harness{New: func(t *testing.T) (services.FileShare, services.Params, string) {
		srv := newFake(t, azfilesfake.Options{})
		return newService(t, srv, map[string]any{"storageAccountKey": srv.Key()}), nil, "case"
	}, Rooted: true})
}
