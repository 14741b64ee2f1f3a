package armfake

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// audienceOf turns a scope ("https://management.azure.com/.default") or a
// resource ("https://management.azure.com/") into an audience.
func audienceOf(scope string) string {
	for _, f := range strings.Fields(scope) {
		if f == "openid" || f == "offline_access" || f == "profile" {
			continue
		}
		f = strings.TrimSuffix(f, "/.default")
		return strings.TrimRight(f, "/")
	}
	return ""
}

// serveAAD serves the Entra ID calls of a confidential client: OpenID
// configuration and the client-credentials token grant.
func (s *Server) serveAAD(w http.ResponseWriter, r *http.Request, body []byte) {
	p := r.URL.Path
	base := s.URL() + "/" + s.opts.Tenant
	switch {
	case strings.HasSuffix(p, "/.well-known/openid-configuration"):
		if !strings.HasPrefix(p, "/"+s.opts.Tenant+"/") {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_tenant", "error_description": "AADSTS90002: Tenant not found."})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"token_endpoint":         base + "/oauth2/v2.0/token",
			"authorization_endpoint": base + "/oauth2/v2.0/authorize",
			"issuer":                 base + "/v2.0",
		})
	case strings.HasSuffix(p, "/oauth2/v2.0/token") && r.Method == http.MethodPost:
		form, err := url.ParseQuery(string(body))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "error_description": "AADSTS900144: malformed form body"})
			return
		}
		if desc := s.checkClient(form, base+"/oauth2/v2.0/token"); desc != "" {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client", "error_description": desc, "error_codes": []int{7000215}})
			return
		}
		aud := audienceOf(form.Get("scope"))
		s.mu.Lock()
		s.tokenCalls++
		tok := s.issueLocked(aud, s.opts.TokenLifetime)
		s.mu.Unlock()
		secs := int(s.opts.TokenLifetime / time.Second)
		writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": secs, "ext_expires_in": secs, "access_token": tok})
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "not_found", "error_description": "the fake serves no " + p})
	}
}

// checkClient authenticates a client-credentials grant; it returns the
// reason for a refusal (never quoting a secret) or "".
func (s *Server) checkClient(form url.Values, tokenURL string) string {
	if form.Get("grant_type") != "client_credentials" {
		return "AADSTS70003: unsupported grant type"
	}
	if s.opts.ClientID == "" || form.Get("client_id") != s.opts.ClientID {
		return "AADSTS700016: Application with identifier '" + form.Get("client_id") + "' was not found in the directory."
	}
	if sec := form.Get("client_secret"); sec != "" {
		if s.opts.ClientSecret == "" || subtle.ConstantTimeCompare([]byte(sec), []byte(s.opts.ClientSecret)) != 1 {
			return "AADSTS7000215: Invalid client secret provided."
		}
		return ""
	}
	if form.Get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		if s.opts.ClientCert == nil {
			return "AADSTS700027: the client has no certificate credential"
		}
		if reason := verifyAssertion(form.Get("client_assertion"), s.opts.ClientCert.PublicKey, s.opts.ClientID); reason != "" {
			return "AADSTS700027: Client assertion failed signature validation: " + reason
		}
		return ""
	}
	return "AADSTS7000218: The request body must contain the following parameter: 'client_assertion' or 'client_secret'."
}

// verifyAssertion checks a client assertion JWT: its signature (RS256 or
// PS256) with pub, its issuer and its lifetime.
func verifyAssertion(jwt string, pub any, clientID string) string {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return "not a JWT"
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	pb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return "bad encoding"
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss string `json:"iss"`
		Exp int64  `json:"exp"`
	}
	if json.Unmarshal(hb, &hdr) != nil || json.Unmarshal(pb, &claims) != nil {
		return "bad JSON"
	}
	key, ok := pub.(*rsa.PublicKey)
	if !ok {
		return "the certificate has no RSA key"
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	var err error
	switch hdr.Alg {
	case "RS256":
		err = rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig)
	case "PS256":
		err = rsa.VerifyPSS(key, crypto.SHA256, sum[:], sig, nil)
	default:
		return "unsupported alg " + hdr.Alg
	}
	if err != nil {
		return "bad signature"
	}
	if claims.Iss != clientID {
		return "wrong issuer"
	}
	if claims.Exp != 0 && time.Unix(claims.Exp, 0).Before(time.Now()) {
		return "expired"
	}
	return ""
}

// serveMSI is an App Service managed identity endpoint (api-version
// 2019-08-01): GET /msi/token?resource=... with X-IDENTITY-HEADER.
func (s *Server) serveMSI(w http.ResponseWriter, r *http.Request) {
	h := r.Header.Get("X-IDENTITY-HEADER")
	if s.opts.IdentityHeader == "" || subtle.ConstantTimeCompare([]byte(h), []byte(s.opts.IdentityHeader)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"statusCode": 401, "message": "the identity header is missing or wrong"})
		return
	}
	aud := audienceOf(r.URL.Query().Get("resource"))
	s.mu.Lock()
	s.tokenCalls++
	tok := s.issueLocked(aud, s.opts.TokenLifetime)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok,
		"expires_on":   strconv.FormatInt(time.Now().Add(s.opts.TokenLifetime).Unix(), 10),
		"resource":     r.URL.Query().Get("resource"),
		"token_type":   "Bearer",
	})
}
