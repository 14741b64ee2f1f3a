package azfilesfake_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/directory"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/file"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/fileerror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/sas"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azfile/share"
	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/internal/azfilesfake"
)

func newFake(t *testing.T, opts azfilesfake.Options) *azfilesfake.Server {
	t.Helper()
	srv, err := azfilesfake.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func keyShare(t *testing.T, srv *azfilesfake.Server, name, key string) *share.Client {
	t.Helper()
	cred, err := share.NewSharedKeyCredential(srv.Account(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := share.NewClientWithSharedKeyCredential(srv.Endpoint()+"/"+name, cred, &share.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randomKey(t *testing.T) string {
	t.Helper()
	b := make([]byte, 64)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestSharedKeyOperations drives every implemented call with the real SDK
// and a SharedKey signature.
func TestSharedKeyOperations(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	ctx := t.Context()
	sc := keyShare(t, srv, "data", srv.Key())

	if _, err := sc.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Create(ctx, nil); !fileerror.HasCode(err, fileerror.ShareAlreadyExists) {
		t.Errorf("second Create: %v, want ShareAlreadyExists", err)
	}
	if _, err := sc.GetProperties(ctx, nil); err != nil {
		t.Fatal(err)
	}
	d := sc.NewDirectoryClient("dir")
	if _, err := d.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Create(ctx, nil); !fileerror.HasCode(err, fileerror.ResourceAlreadyExists) {
		t.Errorf("second directory Create: %v, want ResourceAlreadyExists", err)
	}
	if _, err := d.NewSubdirectoryClient("a").NewSubdirectoryClient("b").Create(ctx, nil); !fileerror.HasCode(err, fileerror.ParentNotFound) {
		t.Errorf("nested Create without parent: %v, want ParentNotFound", err)
	}
	sub := d.NewSubdirectoryClient("sub dir ü")
	if _, err := sub.Create(ctx, nil); err != nil {
		t.Fatal(err)
	}

	// A 9 MiB file goes up in three 4 MiB ranges and comes back in ranges.
	data := make([]byte, 9<<20+17)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	f := d.NewFileClient("big file.bin")
	if _, err := f.Create(ctx, int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.UploadBuffer(ctx, data, &file.UploadBufferOptions{ChunkSize: 4 << 20, Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	props, err := f.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *props.ContentLength != int64(len(data)) {
		t.Errorf("ContentLength = %d, want %d", *props.ContentLength, len(data))
	}
	got := make([]byte, len(data))
	n, err := f.DownloadBuffer(ctx, got, &file.DownloadBufferOptions{ChunkSize: 1 << 20, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(data)) || !bytes.Equal(got, data) {
		t.Fatalf("downloaded %d bytes that differ from the %d uploaded", n, len(data))
	}
	part, err := f.DownloadStream(ctx, &file.DownloadStreamOptions{Range: file.HTTPRange{Offset: 100, Count: 50}})
	if err != nil {
		t.Fatal(err)
	}
	buf := new(bytes.Buffer)
	_, _ = buf.ReadFrom(part.Body)
	part.Body.Close()
	if !bytes.Equal(buf.Bytes(), data[100:150]) {
		t.Errorf("ranged read returned other bytes")
	}
	if _, err := f.ClearRange(ctx, file.HTTPRange{Offset: 0, Count: 512}, nil); err != nil {
		t.Fatal(err)
	}
	small := sub.NewFileClient("small.txt")
	if _, err := small.Create(ctx, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := small.UploadBuffer(ctx, []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.NewRootDirectoryClient().NewFileClient("nope").GetProperties(ctx, nil); !fileerror.HasCode(err, fileerror.ResourceNotFound) {
		t.Errorf("missing file: %v, want ResourceNotFound", err)
	}

	tree, ok := srv.Tree("data")
	if !ok {
		t.Fatal("share missing")
	}
	// (cmp on megabytes of bytes is slow: compare those with bytes.Equal.)
	wantBig := append(make([]byte, 512), data[512:]...)
	if !bytes.Equal(tree["dir/big file.bin"], wantBig) {
		t.Errorf("the big file holds other bytes than uploaded and cleared")
	}
	delete(tree, "dir/big file.bin")
	if diff := cmp.Diff(map[string][]byte{"dir/sub dir ü/small.txt": []byte("hello")}, tree); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if ops := srv.Ops(); ops["PutRange"] != 5 { // 3 ranges + 1 clear + 1 small
		t.Errorf("PutRange calls = %d, want 5", ops["PutRange"])
	}

	// Listing, with paging.
	for i := range 7 {
		fc := d.NewFileClient("f" + string(rune('0'+i)))
		if _, err := fc.Create(ctx, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	pager := d.NewListFilesAndDirectoriesPager(&directory.ListFilesAndDirectoriesOptions{MaxResults: to.Ptr[int32](3)})
	pages := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, dd := range page.Segment.Directories {
			names = append(names, *dd.Name+"/")
		}
		for _, ff := range page.Segment.Files {
			names = append(names, *ff.Name)
		}
	}
	sort.Strings(names)
	want := []string{"big file.bin", "f0", "f1", "f2", "f3", "f4", "f5", "f6", "sub dir ü/"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	if pages != 3 {
		t.Errorf("pages = %d, want 3 (9 entries, 3 a page)", pages)
	}

	// Deletes.
	if _, err := d.Delete(ctx, nil); !fileerror.HasCode(err, fileerror.DirectoryNotEmpty) {
		t.Errorf("deleting a full directory: %v, want DirectoryNotEmpty", err)
	}
	if _, err := small.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.GetProperties(ctx, nil); !fileerror.HasCode(err, fileerror.ResourceNotFound) {
		t.Errorf("deleted directory: %v, want ResourceNotFound", err)
	}
	if _, err := sc.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Tree("data"); ok {
		t.Error("the share survived its deletion")
	}
}

func TestWrongKeyIsRefused(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	srv.CreateShare("data")
	sc := keyShare(t, srv, "data", randomKey(t))
	_, err := sc.NewDirectoryClient("d").Create(t.Context(), nil)
	if !fileerror.HasCode(err, fileerror.AuthenticationFailed) {
		t.Fatalf("error = %v, want AuthenticationFailed", err)
	}
	if tree, _ := srv.Tree("data"); len(tree) != 0 {
		t.Errorf("a refused request changed the share: %v", tree)
	}
	// No credentials at all.
	anon, err := share.NewClientWithNoCredential(srv.Endpoint()+"/data", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.GetProperties(t.Context(), nil); err == nil {
		t.Fatal("an anonymous request was accepted")
	}
}

func sasShare(t *testing.T, srv *azfilesfake.Server, name, query string) *share.Client {
	t.Helper()
	c, err := share.NewClientWithNoCredential(srv.Endpoint()+"/"+name+"?"+query, &share.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSAS(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{})
	srv.CreateShare("data")
	ctx := t.Context()
	cred, err := share.NewSharedKeyCredential(srv.Account(), srv.Key())
	if err != nil {
		t.Fatal(err)
	}
	badCred, err := share.NewSharedKeyCredential(srv.Account(), randomKey(t))
	if err != nil {
		t.Fatal(err)
	}
	shareSAS := func(c *share.SharedKeyCredential, perms sas.SharePermissions, expiry time.Time) string {
		qp, err := sas.SignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: expiry, Permissions: perms.String(), ShareName: "data",
		}.SignWithSharedKey(c)
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}
	accountSAS := func(perms sas.AccountPermissions, types sas.AccountResourceTypes) string {
		qp, err := sas.AccountSignatureValues{
			Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), Permissions: perms.String(), ResourceTypes: types.String(),
		}.SignWithSharedKey(cred)
		if err != nil {
			t.Fatal(err)
		}
		return qp.Encode()
	}
	hour := time.Now().Add(time.Hour)
	all := sas.SharePermissions{Read: true, Create: true, Write: true, Delete: true, List: true}
	tests := []struct {
		name    string
		query   string
		op      func(context.Context, *share.Client) error
		wantErr fileerror.Code // "" for success
	}{
		{"share SAS create dir", shareSAS(cred, all, hour), mkdir("a"), ""},
		{"share SAS list", shareSAS(cred, sas.SharePermissions{List: true}, hour), list, ""},
		{"read-only SAS cannot write", shareSAS(cred, sas.SharePermissions{Read: true, List: true}, hour), mkdir("b"), fileerror.AuthorizationPermissionMismatch},
		{"expired SAS", shareSAS(cred, all, time.Now().Add(-time.Minute)), list, fileerror.AuthenticationFailed},
		{"SAS signed with another key", shareSAS(badCred, all, hour), list, fileerror.AuthenticationFailed},
		{"tampered permissions", strings.Replace(shareSAS(cred, sas.SharePermissions{Read: true}, hour), "sp=r", "sp=rwdl", 1), mkdir("c"), fileerror.AuthenticationFailed},
		{"account SAS", accountSAS(sas.AccountPermissions{Read: true, Write: true, Create: true, List: true}, sas.AccountResourceTypes{Container: true, Object: true}), mkdir("d"), ""},
		{"account SAS without objects", accountSAS(sas.AccountPermissions{Read: true, Write: true, Create: true, List: true}, sas.AccountResourceTypes{Container: true}), mkdir("e"), fileerror.AuthorizationResourceTypeMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op(ctx, sasShare(t, srv, "data", tc.query))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("error = %v", err)
			}
			if tc.wantErr != "" && !fileerror.HasCode(err, tc.wantErr) {
				t.Fatalf("error = %v, want %s", err, tc.wantErr)
			}
		})
	}
	tree, _ := srv.Tree("data")
	if diff := cmp.Diff(map[string][]byte{"a/": nil, "d/": nil}, tree); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

func mkdir(name string) func(context.Context, *share.Client) error {
	return func(ctx context.Context, c *share.Client) error {
		_, err := c.NewDirectoryClient(name).Create(ctx, nil)
		return err
	}
}

func list(ctx context.Context, c *share.Client) error {
	_, err := c.NewRootDirectoryClient().NewListFilesAndDirectoriesPager(nil).NextPage(ctx)
	return err
}

type staticToken string

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(s), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

func TestBearerToken(t *testing.T) {
	srv := newFake(t, azfilesfake.Options{Token: "good-token", TLS: true})
	srv.CreateShare("data")
	for _, tc := range []struct {
		token   string
		intent  bool
		wantErr bool
	}{
		{"good-token", true, false},
		{"bad-token", true, true},
		{"good-token", false, true},
	} {
		opts := &share.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: srv.Client(), Retry: policy.RetryOptions{MaxRetries: -1}}}
		if tc.intent {
			opts.FileRequestIntent = to.Ptr(share.TokenIntentBackup)
		}
		c, err := share.NewClient(srv.Endpoint()+"/data", staticToken(tc.token), opts)
		if err != nil {
			t.Fatal(err)
		}
		err = list(t.Context(), c)
		if (err != nil) != tc.wantErr {
			t.Errorf("token %s intent %v: error = %v, want error %v", tc.token, tc.intent, err, tc.wantErr)
		}
	}
}
