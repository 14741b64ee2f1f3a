package kubernetes

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func newTLSServer(t *testing.T, h http.HandlerFunc) string {
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}
