package azure

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/benchtune/bench/services"
)

// Class names of AzureAuthService (mlos_bench's).
const (
	AuthClassShort = "mlos_bench.services.remote.azure.AzureAuthService"
	AuthClassFull  = "mlos_bench.services.remote.azure.azure_auth.AzureAuthService"
)

func init() {
	services.Register(newAuthFromSpec, AuthClassShort, AuthClassFull)
}

// AuthConfig is the config of AzureAuthService (mlos_bench's keys).
type AuthConfig struct {
	requestConfig
	// TokenRequestInterval: a token is renewed when it expires within
	// this many seconds (default 300).
	TokenRequestInterval *float64 `json:"tokenRequestInterval"`
	// SpClientID, with KeyVaultName, CertName and Tenant, logs in as a
	// service principal with the certificate stored in Key Vault (read
	// with the default credential).
	SpClientID   string `json:"spClientId"`
	KeyVaultName string `json:"keyVaultName"`
	CertName     string `json:"certName"`
	Tenant       string `json:"tenant"`
}

// AuthService gets Azure tokens with azidentity: the default credential
// chain (environment service principal with a secret or a certificate,
// workload identity, managed identity, Azure CLI, Azure Developer CLI), or
// a service principal whose certificate is kept in Key Vault. Tokens are
// cached per scope and renewed tokenRequestInterval seconds before they
// expire. No token, secret or certificate is logged or put in an error.
type AuthService struct {
	cfg      AuthConfig
	interval time.Duration
	copts    azcore.ClientOptions

	mu     sync.Mutex
	cred   azcore.TokenCredential
	tokens map[string]azcore.AccessToken
}

var (
	_ services.Auth = (*AuthService)(nil)
	_ ScopedAuth    = (*AuthService)(nil)
)

func newAuthFromSpec(_ context.Context, spec services.Spec) (any, error) {
	var c AuthConfig
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	s, err := NewAuthService(c)
	if err != nil {
		return nil, fromConfigError(spec, err)
	}
	return s, nil
}

// NewAuthService checks the config; no credential is built and nothing is
// sent until the first token is asked for.
func NewAuthService(c AuthConfig) (*AuthService, error) {
	s := &AuthService{cfg: c, interval: 300 * time.Second, tokens: map[string]azcore.AccessToken{}}
	if c.TokenRequestInterval != nil {
		if *c.TokenRequestInterval < 0 {
			return nil, &configError{"tokenRequestInterval", "must not be negative"}
		}
		s.interval = time.Duration(*c.TokenRequestInterval * float64(time.Second))
	}
	if c.SpClientID != "" {
		for _, kv := range [][2]string{{"keyVaultName", c.KeyVaultName}, {"certName", c.CertName}, {"tenant", c.Tenant}} {
			if strings.TrimSpace(kv[1]) == "" {
				return nil, &configError{kv[0], "is required with spClientId (the service principal's certificate is read from Key Vault)"}
			}
		}
	}
	tr, err := httpTransport()
	if err != nil {
		return nil, err
	}
	if tr != nil {
		s.copts.Transport = tr
	}
	return s, nil
}

// AccessToken returns a token for Azure Resource Manager.
func (s *AuthService) AccessToken(ctx context.Context) (string, error) {
	tok, _, err := s.AccessTokenForScopes(ctx, []string{armScope})
	return tok, err
}

// AccessTokenForScopes returns a token for the scopes, renewing it when
// it expires within tokenRequestInterval.
func (s *AuthService) AccessTokenForScopes(ctx context.Context, scopes []string) (string, time.Time, error) {
	key := strings.Join(scopes, " ")
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[key]; ok && time.Until(t.ExpiresOn) > s.interval {
		return t.Token, t.ExpiresOn, nil
	}
	cred, err := s.credentialLocked(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	t, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: scopes})
	if err != nil {
		return "", time.Time{}, s.authError("get a token for "+key, err)
	}
	s.tokens[key] = t
	slog.Debug("azure: got a new access token", "scopes", key, "expires", t.ExpiresOn.UTC().Format(time.RFC3339))
	return t.Token, t.ExpiresOn, nil
}

// credentialLocked builds the credential on first use.
func (s *AuthService) credentialLocked(ctx context.Context) (azcore.TokenCredential, error) {
	if s.cred != nil {
		return s.cred, nil
	}
	def, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{
		ClientOptions: s.copts, DisableInstanceDiscovery: testMode()})
	if err != nil {
		return nil, s.authError("set up the default Azure credential", err)
	}
	if s.cfg.SpClientID == "" {
		s.cred = def
		return def, nil
	}
	slog.Debug("azure: logging in as a service principal", "client_id", s.cfg.SpClientID, "key_vault", s.cfg.KeyVaultName, "cert", s.cfg.CertName)
	pfx, err := s.keyVaultSecret(ctx, def)
	if err != nil {
		return nil, err
	}
	certs, key, err := azidentity.ParseCertificates(pfx, nil)
	if err != nil {
		return nil, fmt.Errorf("azure auth: secret %q of Key Vault %q is not a certificate with its private key (PEM or PKCS#12 without a password)", s.cfg.CertName, s.cfg.KeyVaultName)
	}
	cred, err := azidentity.NewClientCertificateCredential(s.cfg.Tenant, s.cfg.SpClientID, certs, key,
		&azidentity.ClientCertificateCredentialOptions{ClientOptions: s.copts, DisableInstanceDiscovery: testMode()})
	if err != nil {
		return nil, s.authError("set up the service principal credential", err)
	}
	s.cred = cred
	return cred, nil
}

// keyVaultSecret reads the certificate secret from Key Vault with the
// default credential. Key Vault keeps a PKCS#12 certificate base64-encoded
// and a PEM one as text: both are accepted.
func (s *AuthService) keyVaultSecret(ctx context.Context, cred azcore.TokenCredential) ([]byte, error) {
	tok, err := cred.GetToken(ctx, policy.TokenRequestOptions{Scopes: []string{"https://vault.azure.net/.default"}})
	if err != nil {
		return nil, s.authError("get a Key Vault token", err)
	}
	base := "https://" + url.PathEscape(s.cfg.KeyVaultName) + ".vault.azure.net"
	if ep := os.Getenv(EnvTestEndpoint); ep != "" {
		base = strings.TrimRight(ep, "/") + "/keyvault/" + url.PathEscape(s.cfg.KeyVaultName)
	}
	u := base + "/secrets/" + url.PathEscape(s.cfg.CertName) + "?api-version=7.4"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	client := http.DefaultClient
	if c, ok := s.copts.Transport.(*http.Client); ok {
		client = c
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("azure auth: reading certificate %q from Key Vault %q: %w", s.cfg.CertName, s.cfg.KeyVaultName, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		e := errorFromBody(http.MethodGet, "/secrets/"+s.cfg.CertName, resp.StatusCode, body)
		return nil, fmt.Errorf("azure auth: reading certificate %q from Key Vault %q: HTTP %d %s: %s", s.cfg.CertName, s.cfg.KeyVaultName, e.Status, e.Code, e.Msg)
	}
	var doc struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Value == "" {
		return nil, fmt.Errorf("azure auth: Key Vault %q returned no value for %q", s.cfg.KeyVaultName, s.cfg.CertName)
	}
	if raw, err := base64.StdEncoding.DecodeString(doc.Value); err == nil {
		return raw, nil
	}
	return []byte(doc.Value), nil
}

// authError shortens azidentity's errors (which quote whole HTTP
// responses) to their explanatory lines plus Entra ID's error
// descriptions, and removes any secret the process knows of from them.
func (s *AuthService) authError(what string, err error) error {
	msg := err.Error()
	var keep []string
	for _, l := range strings.Split(msg, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "}") ||
			strings.HasPrefix(l, "\"") || strings.HasPrefix(l, "[") || strings.HasPrefix(l, "]") || strings.HasPrefix(l, "To troubleshoot") ||
			strings.Trim(l, "0123456789,") == "" {
			continue
		}
		keep = append(keep, l)
		if len(keep) == 8 {
			break
		}
	}
	for _, m := range descRE.FindAllStringSubmatch(msg, 3) {
		keep = append(keep, m[1])
	}
	msg = redactSecrets(strings.Join(keep, "; "))
	return fmt.Errorf("azure auth: %s: %s", what, msg)
}

var descRE = regexp.MustCompile(`"error_description":\s*"([^"]*)"`)

// redactSecrets removes the values of the credential environment variables
// azidentity reads from a message.
func redactSecrets(msg string) string {
	for _, name := range []string{"AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD", "IDENTITY_HEADER", "MSI_SECRET", "AZURE_PASSWORD"} {
		if v := os.Getenv(name); len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, "[REDACTED]")
		}
	}
	return msg
}
