package azure

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/armfake"
	"github.com/benchtune/bench/internal/azfilesfake"
	"github.com/benchtune/bench/internal/testutil"
	"github.com/benchtune/bench/services"
)

const (
	testClientID = "11111111-2222-3333-4444-555555555555"
	testSecret   = "s3cr3t-CLIENT-secret-value"
)

// captureLogs sends slog's output at debug level to a buffer for the
// test's duration.
func captureLogs(t *testing.T) *testutil.SyncBuffer {
	t.Helper()
	buf := &testutil.SyncBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

func newAuth(t *testing.T, cfg map[string]any) *AuthService {
	t.Helper()
	svc, err := newSvc(t, AuthClassShort, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return svc.(*AuthService)
}

// useToken provisions a VM with the auth service: ARM accepts its token.
func useToken(t *testing.T, srv *armfake.Server, auth services.Auth, vm string) {
	t.Helper()
	svc, err := newSvc(t, VMClassShort, vmConfig(srv), map[string]any{"vmName": vm}, auth)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.(*VMService).ProvisionHost(context.Background(), services.Params{}); err != nil {
		t.Fatal(err)
	}
}

// TestAuthDefaultChainServicePrincipal: the default chain logs in with
// the service principal of AZURE_CLIENT_ID/AZURE_CLIENT_SECRET against the
// (fake) Entra ID token endpoint; tokens are cached.
func TestAuthDefaultChainServicePrincipal(t *testing.T) {
	logs := captureLogs(t)
	srv := StartFake(t, armfake.Options{ClientID: testClientID, ClientSecret: testSecret, RetryAfter: "0"})
	t.Setenv("AZURE_CLIENT_ID", testClientID)
	t.Setenv("AZURE_CLIENT_SECRET", testSecret)
	t.Setenv("AZURE_TENANT_ID", srv.Tenant())
	auth := newAuth(t, map[string]any{"tokenRequestInterval": 300})
	tok, err := auth.AccessToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tok2, _ := auth.AccessToken(context.Background())
	if tok != tok2 || srv.TokenRequests() != 1 {
		t.Errorf("the token was not cached: %d requests", srv.TokenRequests())
	}
	useToken(t, srv, auth, "sp-vm")
	// A storage token (for AzureFileShareService) is another scope.
	stok, _, err := auth.AccessTokenForScopes(context.Background(), []string{"https://storage.azure.com/.default"})
	if err != nil || stok == tok {
		t.Errorf("storage token: %v (same as ARM's: %v)", err, stok == tok)
	}
	if l := logs.String(); strings.Contains(l, testSecret) || strings.Contains(l, tok) || strings.Contains(l, stok) {
		t.Errorf("the logs hold a secret or a token:\n%s", l)
	}
}

// TestAuthTokenRefresh: a token that expires within tokenRequestInterval
// is renewed before use; ARM calls keep working across the renewal.
func TestAuthTokenRefresh(t *testing.T) {
	srv := StartFake(t, armfake.Options{ClientID: testClientID, ClientSecret: testSecret, TokenLifetime: 2 * time.Second, RetryAfter: "0"})
	t.Setenv("AZURE_CLIENT_ID", testClientID)
	t.Setenv("AZURE_CLIENT_SECRET", testSecret)
	t.Setenv("AZURE_TENANT_ID", srv.Tenant())
	auth := newAuth(t, map[string]any{"tokenRequestInterval": 1})
	ctx := context.Background()
	tok1, _ := auth.AccessToken(ctx)
	tok2, _ := auth.AccessToken(ctx)
	if tok1 == "" || tok1 != tok2 || srv.TokenRequests() != 1 {
		t.Fatalf("tokens %q %q, %d requests", tok1, tok2, srv.TokenRequests())
	}
	useToken(t, srv, auth, "refresh-vm")
	time.Sleep(1100 * time.Millisecond) // now within 1 s of the expiry
	tok3, err := auth.AccessToken(ctx)
	if err != nil || tok3 == tok1 || srv.TokenRequests() != 2 {
		t.Fatalf("after the interval: err %v, renewed %v, %d requests", err, tok3 != tok1, srv.TokenRequests())
	}
	time.Sleep(1100 * time.Millisecond) // the first token has expired
	useToken(t, srv, auth, "refresh-vm")
	if srv.TokenRequests() != 3 {
		t.Errorf("%d token requests, want 3", srv.TokenRequests())
	}
}

// TestAuthManagedIdentity: the default chain falls through to the managed
// identity endpoint (App Service style, IDENTITY_ENDPOINT/IDENTITY_HEADER).
func TestAuthManagedIdentity(t *testing.T) {
	logs := captureLogs(t)
	const header = "identity-header-secret-value"
	srv := StartFake(t, armfake.Options{IdentityHeader: header, RetryAfter: "0"})
	t.Setenv("IDENTITY_ENDPOINT", srv.URL()+"/msi/token")
	t.Setenv("IDENTITY_HEADER", header)
	auth := newAuth(t, map[string]any{})
	useToken(t, srv, auth, "mi-vm")
	if srv.TokenRequests() != 1 {
		t.Errorf("%d token requests", srv.TokenRequests())
	}
	if strings.Contains(logs.String(), header) {
		t.Error("the logs hold the identity header")
	}
}

// testCert makes a self-signed certificate and returns it with its PEM
// (certificate and PKCS#8 key), as Key Vault keeps a PEM certificate.
func testCert(t *testing.T) (*x509.Certificate, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench-sp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pk, _ := x509.MarshalPKCS8PrivateKey(key)
	pemData := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})...)
	return cert, pemData
}

// TestAuthServicePrincipalCertificate: with spClientId, the certificate is
// read from Key Vault (with the default credential, here a managed
// identity) and the service principal signs its client assertion with it.
func TestAuthServicePrincipalCertificate(t *testing.T) {
	logs := captureLogs(t)
	cert, pemData := testCert(t)
	secret := base64.StdEncoding.EncodeToString(pemData)
	_, otherPEM := testCert(t)
	srv := StartFake(t, armfake.Options{ClientID: testClientID, ClientCert: cert, IdentityHeader: "hdr-1234",
		KeyVaultSecrets: map[string]string{"bench-kv/bench-sp-cert": secret, "bench-kv/other-cert": base64.StdEncoding.EncodeToString(otherPEM)},
		RetryAfter:      "0"})
	t.Setenv("IDENTITY_ENDPOINT", srv.URL()+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "hdr-1234")
	cfg := map[string]any{"spClientId": testClientID, "keyVaultName": "bench-kv", "certName": "bench-sp-cert", "tenant": srv.Tenant()}
	auth := newAuth(t, cfg)
	useToken(t, srv, auth, "cert-vm")
	if n := srv.CountCalls("GET", "/keyvault/bench-kv/secrets/bench-sp-cert"); n != 1 {
		t.Errorf("%d Key Vault reads", n)
	}
	if srv.TokenRequests() != 2 {
		t.Errorf("%d token requests, want 2 (Key Vault, then ARM as the service principal)", srv.TokenRequests())
	}
	if l := logs.String(); strings.Contains(l, secret[:40]) || strings.Contains(l, "PRIVATE KEY") {
		t.Error("the logs hold the certificate")
	}
	// A certificate the tenant does not know for the client: refused.
	cfg["certName"] = "other-cert"
	_, err := newAuth(t, cfg).AccessToken(context.Background())
	if err == nil || !strings.Contains(err.Error(), "signature validation") {
		t.Errorf("error = %v", err)
	}
	// A missing secret names the vault and the certificate.
	cfg["certName"] = "no-such-cert"
	_, err = newAuth(t, cfg).AccessToken(context.Background())
	if err == nil || !strings.Contains(err.Error(), `certificate "no-such-cert" from Key Vault "bench-kv"`) || !strings.Contains(err.Error(), "SecretNotFound") {
		t.Errorf("error = %v", err)
	}
}

// TestAuthFailures: a wrong secret is a clear error that quotes neither it
// nor any token; config problems name the key.
func TestAuthFailures(t *testing.T) {
	logs := captureLogs(t)
	srv := StartFake(t, armfake.Options{ClientID: testClientID, ClientSecret: testSecret})
	wrong := "wrong-secret-value-123"
	t.Setenv("AZURE_CLIENT_ID", testClientID)
	t.Setenv("AZURE_CLIENT_SECRET", wrong)
	t.Setenv("AZURE_TENANT_ID", srv.Tenant())
	auth := newAuth(t, map[string]any{})
	_, err := auth.AccessToken(context.Background())
	if err == nil || !strings.Contains(err.Error(), "azure auth: get a token") || !strings.Contains(err.Error(), "AADSTS7000215") {
		t.Fatalf("error = %v", err)
	}
	t.Logf("the error: %v", err)
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), testSecret) {
		t.Errorf("the error quotes a secret: %v", err)
	}
	// Through a VM service: the operation fails at once with the reason.
	svc, err := newSvc(t, VMClassShort, vmConfig(srv), map[string]any{"vmName": "x"}, auth)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = svc.(*VMService).ProvisionHost(context.Background(), services.Params{})
	if err == nil || !strings.Contains(err.Error(), "AADSTS7000215") || time.Since(start) > 5*time.Second {
		t.Errorf("error = %v (after %s)", err, time.Since(start))
	}
	if l := logs.String(); strings.Contains(l, wrong) {
		t.Errorf("the logs hold the secret:\n%s", l)
	}
	// No credential at all: the chain's reasons, no panic.
	t.Setenv("AZURE_CLIENT_SECRET", "")
	t.Setenv("AZURE_CLIENT_ID", "")
	_, err = newAuth(t, map[string]any{}).AccessToken(context.Background())
	if err == nil || !strings.Contains(err.Error(), "azure auth:") {
		t.Errorf("error = %v", err)
	}
	// Config errors.
	_, err = newSvc(t, AuthClassFull, map[string]any{"spClientId": "x", "keyVaultName": "kv", "certName": "c"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "/config/tenant: is required with spClientId") {
		t.Errorf("error = %v", err)
	}
	_, err = newSvc(t, AuthClassFull, map[string]any{"tokenRequestInterval": "soon"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "/config/tokenRequestInterval") {
		t.Errorf("error = %v", err)
	}
}

// TestAuthForAzureFiles: AzureFileShareService without a key or SAS takes
// a storage-scoped token from AzureAuthService (mlos_bench's
// service-auth.jsonc), which the Azure Files fake accepts.
func TestAuthForAzureFiles(t *testing.T) {
	const storageToken = "storage-token-from-entra-id"
	srv := StartFake(t, armfake.Options{ClientID: testClientID, ClientSecret: testSecret,
		FixedTokens: map[string]string{armfake.AudienceStorage: storageToken}})
	t.Setenv("AZURE_CLIENT_ID", testClientID)
	t.Setenv("AZURE_CLIENT_SECRET", testSecret)
	t.Setenv("AZURE_TENANT_ID", srv.Tenant())
	files := newFake(t, azfilesfake.Options{Token: storageToken, TLS: true})
	auth := newAuth(t, map[string]any{"tokenRequestInterval": 300})
	// Through the registry, as a config listing service-auth.jsonc first.
	svc, err := services.New(t.Context(), services.Spec{Class: FileShareClassShort,
		Config: map[string]any{"storageAccountName": files.Account(), "storageFileShareName": "bench-share"},
		Parent: services.NewStack(auth)})
	if err != nil || svc.(*FileShareService).authKind != "token" {
		t.Fatalf("%v %v", svc, err)
	}
	s, err := NewFileShareService(FileShareConfig{StorageAccountName: files.Account(), StorageFileShareName: "bench-share",
		StorageEndpoint: files.Endpoint()}, Options{Transport: files.Client(), Auth: auth})
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(f, []byte("via Entra ID"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Upload(t.Context(), nil, f, "t/f.txt", false); err != nil {
		t.Fatal(err)
	}
	got, _ := files.Tree("bench-share")
	if string(got["t/f.txt"]) != "via Entra ID" {
		t.Errorf("share content %v", got)
	}
	if n := srv.TokenRequests(); n != 1 {
		t.Errorf("%d token requests", n)
	}
}
