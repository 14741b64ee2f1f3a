// Package armfake is an in-process fake of the Azure REST calls bench's
// Azure services make, for tests. No emulator exists for Azure Resource
// Manager, so AzureAuthService, AzureVMService, AzureNetworkService and
// AzureSaaSConfigService are tested against this server. It serves, over
// HTTPS (httptest's certificate):
//
//   - Microsoft Entra ID (AAD): OpenID configuration and the v2.0 token
//     endpoint for the client-credentials grant, with a client secret or a
//     certificate-signed client assertion (the signature is verified);
//   - an App Service style managed identity endpoint (IDENTITY_ENDPOINT);
//   - Key Vault: GET secret;
//   - ARM deployments (PUT, GET) that evaluate a small subset of the
//     template language (parameters(), concat()) to create the template's
//     virtual machines, virtual networks and other resources;
//   - virtual machines: GET, instanceView, start, powerOff, deallocate,
//     restart, and Run Command (PUT, GET with $expand=instanceView), which
//     runs the script with /bin/sh on this machine with the protected
//     parameters as environment variables;
//   - virtual networks: GET, DELETE;
//   - MySQL/PostgreSQL flexible servers and MariaDB servers: list, get and
//     set configurations, batch update, restart.
//
// Long-running operations answer 201/202 with Azure-AsyncOperation and
// Location headers and complete after Options.Polls status polls. Every
// ARM and Key Vault call needs a bearer token the fake issued, for that
// audience and not expired. Faults can be injected: a status (e.g. 429
// with Retry-After, 500, 503) for the next n matching calls, and resources
// whose operations never complete or end in failure.
//
// Paths are ARM's, on the fake's host: https://127.0.0.1:PORT/subscriptions/...
// Key Vault lives under /keyvault/VAULT/secrets/NAME and the managed
// identity endpoint at /msi/token.
package armfake

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Options configure a fake server.
type Options struct {
	// Subscription and ResourceGroup are the only ones that exist
	// (defaults "00000000-0000-0000-0000-000000000000" and "bench-rg").
	Subscription  string
	ResourceGroup string
	// Location is the resource group's location, resourceGroup().location
	// in templates (default "westus2").
	Location string
	// Tenant is the Entra ID tenant (default "fake-tenant").
	Tenant string
	// ClientID with ClientSecret and/or ClientCert is the service principal
	// the token endpoint accepts.
	ClientID     string
	ClientSecret string
	ClientCert   *x509.Certificate
	// IdentityHeader is the secret the managed identity endpoint expects
	// in X-IDENTITY-HEADER (empty: the endpoint refuses every call).
	IdentityHeader string
	// TokenLifetime is the lifetime of issued tokens (default 1h).
	TokenLifetime time.Duration
	// KeyVaultSecrets are the Key Vault secrets, by "vault/name".
	KeyVaultSecrets map[string]string
	// Polls is how many status polls report an operation in progress
	// before it completes (default 1; negative: 0).
	Polls int
	// FixedTokens, by audience, are the token values issued for that
	// audience (instead of random ones), so that another fake (Azure Files)
	// can be told which token to accept.
	FixedTokens map[string]string
	// RetryAfter, when set, is sent as Retry-After on accepted operations
	// and on polls of operations in progress.
	RetryAfter string
	// ConfigurationsAt200 makes database servers answer configuration
	// changes at once with 200 OK (applied immediately) instead of 202
	// Accepted with an operation to follow; Azure documents both answers.
	ConfigurationsAt200 bool
}

// Server is a running fake. Close it when done.
type Server struct {
	srv  *httptest.Server
	opts Options

	mu          sync.Mutex
	tokens      map[string]token
	tokenCalls  int
	faults      []*fault
	stuck       map[string]bool // resource names whose operations never complete
	failing     map[string]bool // resource names whose operations fail
	frozen      map[string]bool // VMs whose power state operations do not change
	ops         map[string]*operation
	deployments map[string]*deployment
	vms         map[string]*VM
	vnets       map[string]map[string]any
	others      map[string]map[string]any // "type/name" -> resource
	servers     map[string]*DBServer      // "provider/kind/name", lower-case
	runCmds     map[string]*RunCommand    // "vm/command"
	runLog      []*RunCommand
	calls       []string // "METHOD /path"
	armBodies   []string // "METHOD /path\x00body" of ARM calls (never token requests)
	seq         int
	scriptDir   string
	opBase      string
}

type token struct {
	audience string
	expires  time.Time
}

type fault struct {
	method, contains string
	status           int
	left             int
	retryAfter       string
}

// New starts a fake server.
func New(opts Options) *Server {
	if opts.Subscription == "" {
		opts.Subscription = "00000000-0000-0000-0000-000000000000"
	}
	if opts.Location == "" {
		opts.Location = "westus2"
	}
	if opts.ResourceGroup == "" {
		opts.ResourceGroup = "bench-rg"
	}
	if opts.Tenant == "" {
		opts.Tenant = "fake-tenant"
	}
	if opts.TokenLifetime == 0 {
		opts.TokenLifetime = time.Hour
	}
	if opts.Polls == 0 {
		opts.Polls = 1
	} else if opts.Polls < 0 {
		opts.Polls = 0
	}
	s := &Server{opts: opts, tokens: map[string]token{}, stuck: map[string]bool{}, failing: map[string]bool{}, frozen: map[string]bool{},
		ops: map[string]*operation{}, deployments: map[string]*deployment{}, vms: map[string]*VM{},
		vnets: map[string]map[string]any{}, others: map[string]map[string]any{}, servers: map[string]*DBServer{}, runCmds: map[string]*RunCommand{}}
	s.srv = httptest.NewTLSServer(s)
	return s
}

// URL is the server's base URL (https://127.0.0.1:PORT).
func (s *Server) URL() string { return s.srv.URL }

// Client is an HTTP client that trusts the server's certificate.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// CertPEM is the server's certificate, PEM-encoded (for a CA file).
func (s *Server) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// Close stops the server (and waits for running scripts' handlers).
func (s *Server) Close() { s.srv.Close() }

// Subscription and ResourceGroup name the fake's only resource group.
func (s *Server) Subscription() string  { return s.opts.Subscription }
func (s *Server) ResourceGroup() string { return s.opts.ResourceGroup }

// Tenant is the fake's Entra ID tenant.
func (s *Server) Tenant() string { return s.opts.Tenant }

// Audiences of the tokens.
const (
	AudienceARM      = "https://management.azure.com"
	AudienceKeyVault = "https://vault.azure.net"
	AudienceStorage  = "https://storage.azure.com"
)

// IssueToken mints a token for the audience (as if the token endpoint had
// issued it), for tests of services without an auth service.
func (s *Server) IssueToken(audience string, lifetime time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueLocked(audience, lifetime)
}

func (s *Server) issueLocked(audience string, lifetime time.Duration) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	t := "fake." + hex.EncodeToString(b)
	if f, ok := s.opts.FixedTokens[audience]; ok {
		t = f
	}
	s.tokens[t] = token{audience: audience, expires: time.Now().Add(lifetime)}
	return t
}

// TokenRequests counts the tokens issued by the token and managed
// identity endpoints.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenCalls
}

// Fail makes the next n calls whose method is method (any when empty) and
// whose path contains contains answer status with an ARM error body, and
// Retry-After: retryAfter when it is not empty.
func (s *Server) Fail(method, contains string, status, n int, retryAfter string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{method: method, contains: contains, status: status, left: n, retryAfter: retryAfter})
}

// Stick makes operations on the named resource (a VM, a deployment, a
// virtual network or a server) stay in progress forever.
func (s *Server) Stick(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stuck[name] = true
}

// FreezePower makes the VM's actions succeed without changing its power
// state (a VM that never reaches the state asked for).
func (s *Server) FreezePower(vm string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen[vm] = true
}

// FailOperations makes operations on the named resource end Failed.
func (s *Server) FailOperations(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[name] = true
}

// Calls returns the calls received so far, as "METHOD /path?query".
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// LastBody returns the body of the last ARM call with the method whose
// path contains contains ("" if none).
func (s *Server) LastBody(method, contains string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.armBodies) - 1; i >= 0; i-- {
		head, body, _ := strings.Cut(s.armBodies[i], "\x00")
		m, p, _ := strings.Cut(head, " ")
		if m == method && strings.Contains(p, contains) {
			return body
		}
	}
	return ""
}

// CountCalls counts the calls with the method whose path contains contains.
func (s *Server) CountCalls(method, contains string) int {
	n := 0
	for _, c := range s.Calls() {
		m, p, _ := strings.Cut(c, " ")
		if (method == "" || m == method) && strings.Contains(p, contains) {
			n++
		}
	}
	return n
}

// apiError is an error response in ARM's format.
type apiError struct {
	status     int
	code, msg  string
	retryAfter string
}

func fail(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.retryAfter != "" {
		w.Header().Set("Retry-After", e.retryAfter)
	}
	writeJSON(w, e.status, map[string]any{"error": map[string]any{"code": e.code, "message": e.msg}})
}

// ServeHTTP handles one call.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls = append(s.calls, r.Method+" "+r.URL.RequestURI())
	var injected *apiError
	for _, f := range s.faults {
		if f.left > 0 && (f.method == "" || f.method == r.Method) && strings.Contains(r.URL.Path, f.contains) {
			f.left--
			code := "InternalServerError"
			switch f.status {
			case http.StatusTooManyRequests:
				code = "TooManyRequests"
			case http.StatusServiceUnavailable:
				code = "ServiceUnavailable"
			}
			injected = &apiError{status: f.status, code: code, msg: "injected fault", retryAfter: f.retryAfter}
			break
		}
	}
	s.mu.Unlock()
	if injected != nil {
		writeError(w, injected)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		writeError(w, fail(http.StatusBadRequest, "InvalidRequest", "reading the body: %v", err))
		return
	}
	p := r.URL.Path
	if strings.HasPrefix(p, "/subscriptions/") {
		s.mu.Lock()
		s.armBodies = append(s.armBodies, r.Method+" "+p+"\x00"+string(body))
		s.mu.Unlock()
	}
	switch {
	case p == "/msi/token":
		s.serveMSI(w, r)
	case strings.HasSuffix(p, "/.well-known/openid-configuration") || strings.HasSuffix(p, "/oauth2/v2.0/token") ||
		strings.HasPrefix(p, "/common/discovery/"):
		s.serveAAD(w, r, body)
	case strings.HasPrefix(p, "/keyvault/"):
		if e := s.checkBearer(r, AudienceKeyVault); e != nil {
			writeError(w, e)
			return
		}
		s.serveKeyVault(w, r)
	case strings.HasPrefix(p, "/subscriptions/"):
		if e := s.checkBearer(r, AudienceARM); e != nil {
			writeError(w, e)
			return
		}
		s.serveARM(w, r, body)
	default:
		writeError(w, fail(http.StatusNotFound, "NotFound", "the fake serves no %s", p))
	}
}

// checkBearer checks the request's bearer token.
func (s *Server) checkBearer(r *http.Request, audience string) *apiError {
	authz := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(authz, "Bearer ")
	if !ok {
		e := fail(http.StatusUnauthorized, "AuthenticationFailed", "authentication failed: the Authorization header is missing or not a bearer token")
		return e
	}
	s.mu.Lock()
	t, known := s.tokens[tok]
	s.mu.Unlock()
	switch {
	case !known:
		return fail(http.StatusUnauthorized, "InvalidAuthenticationToken", "the access token is invalid")
	case time.Now().After(t.expires):
		return fail(http.StatusUnauthorized, "ExpiredAuthenticationToken", "the access token expiry UTC time is earlier than the current UTC time")
	case t.audience != audience:
		return fail(http.StatusUnauthorized, "InvalidAuthenticationTokenAudience", "the access token has been obtained for the wrong audience or resource %q", t.audience)
	}
	return nil
}

func (s *Server) serveKeyVault(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/keyvault/"), "/")
	if r.Method != http.MethodGet || len(parts) < 3 || parts[1] != "secrets" {
		writeError(w, fail(http.StatusBadRequest, "BadParameter", "the fake Key Vault serves GET /keyvault/VAULT/secrets/NAME only"))
		return
	}
	s.mu.Lock()
	v, ok := s.opts.KeyVaultSecrets[parts[0]+"/"+parts[2]]
	s.mu.Unlock()
	if !ok {
		writeError(w, fail(http.StatusNotFound, "SecretNotFound", "a secret with (name/id) %s was not found in this key vault", parts[2]))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": v, "id": s.URL() + r.URL.Path})
}

// newID returns a fresh identifier.
func (s *Server) newIDLocked() string {
	s.seq++
	return fmt.Sprintf("%08d-fake-%04d", s.seq, s.seq%10000)
}

// ScriptDir sets the working directory in which Run Command scripts run
// (default: the process's temporary directory).
func (s *Server) ScriptDir(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scriptDir = dir
}

// OperationsAt makes the operation URLs of later answers point at base
// (another host), to test that clients do not follow them with a token.
func (s *Server) OperationsAt(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opBase = base
}
