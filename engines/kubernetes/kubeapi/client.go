// Package kubeapi is a small client of the Kubernetes REST API: net/http
// and JSON of the few fields bench uses (batch/v1 Job, v1 Pod and
// ConfigMap), instead of client-go's typed clientset, which would add a
// large part to a cold build of bench. It reads a kubeconfig (its current
// or a named context) or the in-cluster service account, authenticates
// with a bearer token, a token file, a client certificate or an exec
// credential plugin, and does GET, POST, PATCH, DELETE and streaming
// watches (?watch=1). The Kubernetes engine and its test stand-ins use it.
package kubeapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is where and how to reach an API server.
type Config struct {
	Host      string // https://host:port
	Namespace string // the context's namespace ("" if none)
	TLS       *tls.Config
	Token     string
	TokenFile string // re-read on use (projected service account tokens rotate)
	Exec      *execConfig
	// Source says where the config came from, for errors.
	Source string
}

// kubeconfig is the part of a kubeconfig file bench reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
			TLSServerName            string `yaml:"tls-server-name"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string      `yaml:"token"`
			TokenFile             string      `yaml:"tokenFile"`
			ClientCertificate     string      `yaml:"client-certificate"`
			ClientCertificateData string      `yaml:"client-certificate-data"`
			ClientKey             string      `yaml:"client-key"`
			ClientKeyData         string      `yaml:"client-key-data"`
			Exec                  *execConfig `yaml:"exec"`
			AuthProvider          any         `yaml:"auth-provider"`
			Username              string      `yaml:"username"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster   string `yaml:"cluster"`
			User      string `yaml:"user"`
			Namespace string `yaml:"namespace"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// execConfig is a kubeconfig user's exec credential plugin (aws eks
// get-token, gke-gcloud-auth-plugin, kubelogin, ...).
type execConfig struct {
	Command    string   `yaml:"command"`
	Args       []string `yaml:"args"`
	APIVersion string   `yaml:"apiVersion"`
	Env        []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	dir string // the kubeconfig's folder (a relative command resolves there)

	mu      sync.Mutex
	token   string
	expires time.Time
}

// saDir is the in-cluster service account's folder (a variable for
// tests).
var saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// InCluster reports whether this process runs in a pod with a service
// account token.
func InCluster() bool {
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" || os.Getenv("KUBERNETES_SERVICE_PORT") == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(saDir, "token"))
	return err == nil
}

// InClusterConfig is the pod's service account config.
func InClusterConfig() (*Config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	ca, err := os.ReadFile(filepath.Join(saDir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("in-cluster config: %s holds no PEM certificate", filepath.Join(saDir, "ca.crt"))
	}
	ns, _ := os.ReadFile(filepath.Join(saDir, "namespace"))
	return &Config{
		Host:      "https://" + net.JoinHostPort(host, port),
		Namespace: strings.TrimSpace(string(ns)),
		TLS:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		TokenFile: filepath.Join(saDir, "token"),
		Source:    "the in-cluster service account",
	}, nil
}

// KubeconfigPaths returns the kubeconfig files to read: path, else
// $KUBECONFIG (a List), else ~/.kube/config.
func KubeconfigPaths(path string) []string {
	if path != "" {
		return []string{path}
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		var out []string
		for _, p := range filepath.SplitList(env) {
			if p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	return []string{filepath.Join(home, ".kube", "config")}
}

// LoadKubeconfig reads the first kubeconfig of paths that exists and
// resolves a context (contextName, else its current-context).
func LoadKubeconfig(paths []string, contextName string) (*Config, error) {
	var file string
	var raw []byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil {
			file, raw = p, b
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading kubeconfig %s: %w", p, err)
		}
	}
	if file == "" {
		return nil, fmt.Errorf("no kubeconfig found (looked at %s)", strings.Join(paths, ", "))
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", file, err)
	}
	dir := filepath.Dir(file)
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	name := contextName
	if name == "" {
		name = kc.CurrentContext
	}
	if name == "" {
		return nil, fmt.Errorf("kubeconfig %s: no current-context; set config key \"context\"", file)
	}
	ci := -1
	for i := range kc.Contexts {
		if kc.Contexts[i].Name == name {
			ci = i
		}
	}
	if ci < 0 {
		return nil, fmt.Errorf("kubeconfig %s: no context named %q", file, name)
	}
	ctxt := kc.Contexts[ci].Context
	cfg := &Config{Namespace: ctxt.Namespace, Source: fmt.Sprintf("kubeconfig %s, context %s", file, name)}
	found := false
	for _, c := range kc.Clusters {
		if c.Name != ctxt.Cluster {
			continue
		}
		found = true
		cfg.Host = strings.TrimRight(c.Cluster.Server, "/")
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.Cluster.TLSServerName, InsecureSkipVerify: c.Cluster.InsecureSkipTLSVerify} //nolint:gosec // the user's kubeconfig asks for it
		var ca []byte
		switch {
		case c.Cluster.CertificateAuthorityData != "":
			b, err := base64.StdEncoding.DecodeString(c.Cluster.CertificateAuthorityData)
			if err != nil {
				return nil, fmt.Errorf("%s: cluster %s: certificate-authority-data: %w", cfg.Source, c.Name, err)
			}
			ca = b
		case c.Cluster.CertificateAuthority != "":
			b, err := os.ReadFile(abs(c.Cluster.CertificateAuthority))
			if err != nil {
				return nil, fmt.Errorf("%s: cluster %s: %w", cfg.Source, c.Name, err)
			}
			ca = b
		}
		if ca != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("%s: cluster %s: the certificate authority holds no PEM certificate", cfg.Source, c.Name)
			}
			tc.RootCAs = pool
		}
		cfg.TLS = tc
	}
	if !found {
		return nil, fmt.Errorf("%s: no cluster named %q", cfg.Source, ctxt.Cluster)
	}
	if cfg.Host == "" {
		return nil, fmt.Errorf("%s: cluster %s has no server", cfg.Source, ctxt.Cluster)
	}
	for _, u := range kc.Users {
		if u.Name != ctxt.User {
			continue
		}
		cfg.Token = u.User.Token
		cfg.TokenFile = abs(u.User.TokenFile)
		certPEM, keyPEM := []byte(nil), []byte(nil)
		var err error
		if u.User.ClientCertificateData != "" {
			if certPEM, err = base64.StdEncoding.DecodeString(u.User.ClientCertificateData); err != nil {
				return nil, fmt.Errorf("%s: user %s: client-certificate-data: %w", cfg.Source, u.Name, err)
			}
		} else if u.User.ClientCertificate != "" {
			if certPEM, err = os.ReadFile(abs(u.User.ClientCertificate)); err != nil {
				return nil, fmt.Errorf("%s: user %s: %w", cfg.Source, u.Name, err)
			}
		}
		if u.User.ClientKeyData != "" {
			if keyPEM, err = base64.StdEncoding.DecodeString(u.User.ClientKeyData); err != nil {
				return nil, fmt.Errorf("%s: user %s: client-key-data: %w", cfg.Source, u.Name, err)
			}
		} else if u.User.ClientKey != "" {
			if keyPEM, err = os.ReadFile(abs(u.User.ClientKey)); err != nil {
				return nil, fmt.Errorf("%s: user %s: %w", cfg.Source, u.Name, err)
			}
		}
		if certPEM != nil || keyPEM != nil {
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				// (The error names no key material.)
				return nil, fmt.Errorf("%s: user %s: client certificate and key: %w", cfg.Source, u.Name, err)
			}
			cfg.TLS.Certificates = []tls.Certificate{cert}
		}
		if u.User.Exec != nil {
			cfg.Exec = u.User.Exec
			cfg.Exec.dir = dir
		}
		if u.User.AuthProvider != nil && cfg.Token == "" && cfg.Exec == nil {
			return nil, fmt.Errorf("%s: user %s uses an auth-provider, which bench does not support; use an exec credential plugin or a token", cfg.Source, u.Name)
		}
	}
	return cfg, nil
}

// token returns the bearer token to send ("" for none).
func (c *Config) token(ctx context.Context) (string, error) {
	switch {
	case c.Token != "":
		return c.Token, nil
	case c.TokenFile != "":
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return "", fmt.Errorf("reading the token file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	case c.Exec != nil:
		return c.Exec.get(ctx)
	}
	return "", nil
}

// get runs the exec plugin (or returns its cached token).
func (e *execConfig) get(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.token != "" && (e.expires.IsZero() || time.Until(e.expires) > time.Minute) {
		return e.token, nil
	}
	cmdPath := e.Command
	if strings.Contains(cmdPath, "/") && !filepath.IsAbs(cmdPath) {
		cmdPath = filepath.Join(e.dir, cmdPath)
	}
	cmd := exec.CommandContext(ctx, cmdPath, e.Args...)
	cmd.Env = os.Environ()
	for _, v := range e.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	apiVersion := e.APIVersion
	if apiVersion == "" {
		apiVersion = "client.authentication.k8s.io/v1"
	}
	info, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "ExecCredential", "spec": map[string]any{"interactive": false}})
	cmd.Env = append(cmd.Env, "KUBERNETES_EXEC_INFO="+string(info))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// The plugin's stderr may be long; its last line says why.
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		return "", fmt.Errorf("exec credential plugin %s: %w: %s", e.Command, err, lines[len(lines)-1])
	}
	var cred struct {
		Status struct {
			Token               string    `json:"token"`
			ExpirationTimestamp time.Time `json:"expirationTimestamp"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &cred); err != nil {
		return "", fmt.Errorf("exec credential plugin %s: its output is not an ExecCredential: %w", e.Command, err)
	}
	if cred.Status.Token == "" {
		return "", fmt.Errorf("exec credential plugin %s gave no token (client certificates from plugins are not supported)", e.Command)
	}
	e.token, e.expires = cred.Status.Token, cred.Status.ExpirationTimestamp
	return e.token, nil
}

// Client does requests against one API server and counts them.
type Client struct {
	cfg  *Config
	http *http.Client
	// watchHTTP has no overall timeout (watches stream for minutes).
	watchHTTP *http.Client
	Calls     atomic.Int64
	Watches   atomic.Int64
}

func NewClient(cfg *Config) *Client {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     cfg.TLS,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: 60 * time.Second}, watchHTTP: &http.Client{Transport: tr}}
}

// APIError is an error status of the API server.
type APIError struct {
	Code    int
	Reason  string
	Message string
	Verb    string
	Path    string
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.Verb, e.Path, e.Code, e.Reason, msg)
}

func IsStatus(err error, code int) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

func IsNotFound(err error) bool { return IsStatus(err, http.StatusNotFound) }
func IsConflict(err error) bool { return IsStatus(err, http.StatusConflict) }

// newRequest builds a request with auth.
func (c *Client) newRequest(ctx context.Context, method, path string, q url.Values, body any, contentType string) (*http.Request, error) {
	u := c.cfg.Host + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "bench-kubernetes-engine")
	if body != nil {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	tok, err := c.cfg.token(ctx)
	if err != nil {
		return nil, err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return req, nil
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *Client) Do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	return c.DoType(ctx, method, path, q, body, "", out)
}

func (c *Client) DoType(ctx context.Context, method, path string, q url.Values, body any, contentType string, out any) error {
	req, err := c.newRequest(ctx, method, path, q, body, contentType)
	if err != nil {
		return err
	}
	c.Calls.Add(1)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return statusError(method, path, resp.StatusCode, data)
	}
	if out == nil {
		return nil
	}
	if s, ok := out.(*string); ok {
		*s = string(data)
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

func statusError(method, path string, code int, data []byte) error {
	var st struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if json.Unmarshal(data, &st) != nil || st.Message == "" {
		st.Message = strings.TrimSpace(string(data))
		if len(st.Message) > 500 {
			st.Message = st.Message[:500]
		}
	}
	return &APIError{Code: code, Reason: st.Reason, Message: st.Message, Verb: method, Path: path}
}

// WatchEvent is one event of a watch stream.
type WatchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// watch opens a watch (GET path?watch=1&...) and calls fn with each event
// until the stream ends, ctx ends or fn returns an error.
func (c *Client) Watch(ctx context.Context, path string, q url.Values, fn func(WatchEvent) error) error {
	q2 := url.Values{}
	for k, v := range q {
		q2[k] = v
	}
	q2.Set("watch", "1")
	q2.Set("allowWatchBookmarks", "true")
	req, err := c.newRequest(ctx, http.MethodGet, path, q2, nil, "")
	if err != nil {
		return err
	}
	c.Watches.Add(1)
	resp, err := c.watchHTTP.Do(req)
	if err != nil {
		return fmt.Errorf("watch %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return statusError("WATCH", path, resp.StatusCode, data)
	}
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var ev WatchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch %s: %w", path, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}

// Cfg returns the client's config.
func (c *Client) Cfg() *Config { return c.cfg }
