package azfilesfake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// errAuth is an authentication failure: the message goes into the error
// response; it never holds a key, token or signature.
type errAuth struct {
	status int
	code   string
	msg    string
}

func (e *errAuth) Error() string { return e.code + ": " + e.msg }

func authFailed(msg string) *errAuth {
	return &errAuth{status: http.StatusForbidden, code: "AuthenticationFailed", msg: msg}
}

// access describes what a request needs, for SAS permission checks.
type access struct {
	perm     byte   // 'r', 'w', 'c', 'd' or 'l'
	level    byte   // account SAS resource type: 's' service, 'c' share, 'o' directory or file
	resource string // "share" or "share/path" (unescaped), for service SAS scope
}

// authenticate checks the request's credentials: a SharedKey
// Authorization header, a Bearer token (over TLS), or a SAS query.
func (s *Server) authenticate(r *http.Request, need access) error {
	authz := r.Header.Get("Authorization")
	q := r.URL.Query()
	switch {
	case strings.HasPrefix(authz, "SharedKey "):
		return s.checkSharedKey(r, strings.TrimPrefix(authz, "SharedKey "))
	case strings.HasPrefix(authz, "Bearer "):
		return s.checkBearer(r, strings.TrimPrefix(authz, "Bearer "))
	case authz != "":
		return authFailed("unsupported Authorization scheme")
	case q.Get("sig") != "":
		return s.checkSAS(r, q, need)
	default:
		return &errAuth{status: http.StatusUnauthorized, code: "NoAuthenticationInformation", msg: "the request carries no credentials"}
	}
}

func (s *Server) sign(stringToSign string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(stringToSign))
	return m.Sum(nil)
}

func (s *Server) checkSignature(stringToSign, sig string) error {
	got, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return authFailed("the signature is not base64")
	}
	if !hmac.Equal(got, s.sign(stringToSign)) {
		return authFailed("the MAC signature found in the request is not the same as any computed signature")
	}
	return nil
}

// checkSharedKey verifies "SharedKey account:signature" as the Azure
// Storage documentation specifies for version 2009-09-19 and later.
func (s *Server) checkSharedKey(r *http.Request, cred string) error {
	acct, sig, ok := strings.Cut(cred, ":")
	if !ok || acct != s.account {
		return authFailed("the SharedKey credential names another account")
	}
	date := r.Header.Get("X-Ms-Date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	t, err := http.ParseTime(date)
	if err != nil {
		return authFailed("the request has no valid x-ms-date or Date header")
	}
	if d := time.Since(t); d > 15*time.Minute || d < -15*time.Minute {
		return authFailed("the request time is more than 15 minutes away from the server's")
	}
	return s.checkSignature(s.sharedKeyStringToSign(r), sig)
}

func (s *Server) sharedKeyStringToSign(r *http.Request) string {
	h := r.Header
	contentLength := ""
	if r.ContentLength > 0 {
		contentLength = strconv.FormatInt(r.ContentLength, 10)
	}
	var b strings.Builder
	for _, v := range []string{
		r.Method,
		h.Get("Content-Encoding"),
		h.Get("Content-Language"),
		contentLength,
		h.Get("Content-Md5"),
		h.Get("Content-Type"),
		h.Get("Date"),
		h.Get("If-Modified-Since"),
		h.Get("If-Match"),
		h.Get("If-None-Match"),
		h.Get("If-Unmodified-Since"),
		h.Get("Range"),
	} {
		b.WriteString(v)
		b.WriteByte('\n')
	}
	// Canonicalized headers: x-ms-* in lower case, sorted, one a line.
	var names []string
	for k := range h {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ms-") {
			names = append(names, lk)
		}
	}
	sort.Strings(names)
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(strings.TrimSpace(strings.Join(h.Values(k), ",")))
		b.WriteByte('\n')
	}
	// Canonicalized resource: /account + the path as sent, then each query
	// parameter (lower-case name, sorted values) on its own line.
	b.WriteString("/" + s.account + r.URL.EscapedPath())
	q := r.URL.Query()
	params := make([]string, 0, len(q))
	for k := range q {
		params = append(params, k)
	}
	sort.Strings(params)
	for _, k := range params {
		vals := append([]string(nil), q[k]...)
		sort.Strings(vals)
		b.WriteString("\n" + strings.ToLower(k) + ":" + strings.Join(vals, ","))
	}
	return b.String()
}

func (s *Server) checkBearer(r *http.Request, token string) error {
	if r.TLS == nil {
		return authFailed("bearer tokens are accepted over HTTPS only")
	}
	if s.token == "" || !hmac.Equal([]byte(token), []byte(s.token)) {
		return &errAuth{status: http.StatusUnauthorized, code: "InvalidAuthenticationInfo", msg: "the bearer token is not valid"}
	}
	if !strings.EqualFold(r.Header.Get("X-Ms-File-Request-Intent"), "backup") {
		return &errAuth{status: http.StatusBadRequest, code: "MissingRequiredHeader", msg: "token authentication needs x-ms-file-request-intent: backup"}
	}
	return nil
}

// checkSAS verifies an account SAS (ss/srt) or a service SAS (sr) signed
// with the account key, its validity window, protocol and permissions.
func (s *Server) checkSAS(r *http.Request, q url.Values, need access) error {
	now := time.Now()
	if st := q.Get("st"); st != "" {
		t, err := parseSASTime(st)
		if err != nil {
			return authFailed("the SAS start time (st) is malformed")
		}
		if now.Before(t.Add(-time.Minute)) {
			return authFailed("the SAS is not valid yet")
		}
	}
	se, err := parseSASTime(q.Get("se"))
	if err != nil {
		return authFailed("the SAS expiry time (se) is missing or malformed")
	}
	if now.After(se) {
		return authFailed("the SAS has expired")
	}
	if q.Get("sip") != "" {
		return authFailed("the fake does not support IP-restricted SAS (sip)")
	}
	switch q.Get("spr") {
	case "", "https,http", "http,https":
	case "https":
		if r.TLS == nil {
			return authFailed("the SAS allows HTTPS only")
		}
	default:
		return authFailed("the SAS protocol (spr) is invalid")
	}
	perms := q.Get("sp")
	var toSign string
	if q.Get("ss") != "" || q.Get("srt") != "" {
		// Account SAS.
		if !strings.Contains(q.Get("ss"), "f") {
			return &errAuth{status: http.StatusForbidden, code: "AuthorizationServiceMismatch", msg: "the account SAS does not include the file service"}
		}
		if !strings.ContainsRune(q.Get("srt"), rune(need.level)) {
			return &errAuth{status: http.StatusForbidden, code: "AuthorizationResourceTypeMismatch", msg: "the account SAS does not cover this resource type"}
		}
		toSign = strings.Join([]string{
			s.account, perms, q.Get("ss"), q.Get("srt"), q.Get("st"), q.Get("se"),
			q.Get("sip"), q.Get("spr"), q.Get("sv"), q.Get("ses"), "",
		}, "\n")
	} else {
		// Service SAS for a share (sr=s) or one file (sr=f); the resource
		// path comes from the request URL.
		var scope string
		switch q.Get("sr") {
		case "s":
			scope, _, _ = strings.Cut(need.resource, "/")
		case "f":
			scope = need.resource
		default:
			return authFailed("the service SAS resource (sr) is missing or not supported")
		}
		if q.Get("sr") == "f" && need.level != 'o' {
			return &errAuth{status: http.StatusForbidden, code: "AuthorizationResourceTypeMismatch", msg: "a file SAS covers one file only"}
		}
		toSign = strings.Join([]string{
			perms, q.Get("st"), q.Get("se"), "/file/" + s.account + "/" + scope,
			q.Get("si"), q.Get("sip"), q.Get("spr"), q.Get("sv"),
			q.Get("rscc"), q.Get("rscd"), q.Get("rsce"), q.Get("rscl"), q.Get("rsct"),
		}, "\n")
	}
	if err := s.checkSignature(toSign, q.Get("sig")); err != nil {
		return err
	}
	if !strings.ContainsRune(perms, rune(need.perm)) && !(need.perm == 'c' && strings.ContainsRune(perms, 'w')) {
		return &errAuth{status: http.StatusForbidden, code: "AuthorizationPermissionMismatch", msg: "the SAS does not grant the permission this operation needs"}
	}
	return nil
}

func parseSASTime(v string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}
