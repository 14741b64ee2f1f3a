package kubeapi

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// TestInClusterConfig: inside a pod, the service account's token, CA and
// namespace and KUBERNETES_SERVICE_HOST/PORT make the config; the token
// file is read again on each request (projected tokens rotate).
func TestInClusterConfig(t *testing.T) {
	var auth []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	old := saDir
	saDir = dir
	defer func() { saDir = old }()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	for name, data := range map[string]string{"token": "tok-1", "ca.crt": string(ca), "namespace": "team-b\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u, _ := url.Parse(srv.URL)
	host, port, _ := net.SplitHostPort(u.Host)
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	if !InCluster() {
		t.Fatal("InCluster() is false")
	}
	cfg, err := InClusterConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Namespace != "team-b" {
		t.Errorf("namespace %q", cfg.Namespace)
	}
	c := NewClient(cfg)
	if err := c.Do(context.Background(), http.MethodGet, "/api", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("tok-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(context.Background(), http.MethodGet, "/api", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 2 || auth[0] != "Bearer tok-1" || auth[1] != "Bearer tok-2" {
		t.Errorf("Authorization headers %q, want the token file's, read each time", auth)
	}
	if c.Calls.Load() != 2 {
		t.Errorf("%d calls counted", c.Calls.Load())
	}
}
