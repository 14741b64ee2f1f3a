package serve

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/schedulers"
	"github.com/benchtune/bench/storage"
	"github.com/benchtune/bench/trial"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key
}

// scoreRunner succeeds with score = x.
type scoreRunner struct{ id int }

func (r scoreRunner) ID() int { return r.id }
func (r scoreRunner) Run(_ context.Context, s schedulers.Spec) trial.Outcome {
	return trial.Outcome{Status: trial.SUCCEEDED, Results: map[string]any{"score": s.Params["x"]}}
}
func (scoreRunner) Teardown(context.Context) error { return nil }
func (scoreRunner) Close() error                   { return nil }

// TestWorkerOverTLS: a worker trusting the server's self-signed
// certificate (its CA file) runs the experiment's trials over HTTPS and
// exits once the experiment is over; a worker without the CA is refused
// by TLS verification.
func TestWorkerOverTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	st, err := storage.Open(context.Background(), storage.Config{DriverName: "sqlite", Database: filepath.Join(dir, "db.sqlite")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exp, _, err := st.Experiment(ctx, storage.ExperimentInfo{ID: "e", Objectives: []storage.Objective{{Name: "score", Direction: "min"}}})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	pool := NewPool(0, nil, logger)
	var trials []*served
	for i, x := range []string{"1", "2", "3"} {
		trials = append(trials, serveTrial(t, pool, i+1, x, nil))
	}
	srv, err := New(exp, Config{Token: "t0k", Pool: pool, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() { _ = srv.ListenAndServe(ctx, "127.0.0.1:0", cert, key, ready) }()
	addr := <-ready

	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = RunWorker(wctx, WorkerConfig{URL: "https://" + addr, Token: "t0k", Runners: []schedulers.Runner{scoreRunner{1}}, Poll: 50 * time.Millisecond})
	wcancel()
	if err == nil {
		t.Fatal("a worker that does not trust the certificate connected")
	}
	type result struct {
		stats WorkerStats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		stats, err := RunWorker(ctx, WorkerConfig{URL: "https://" + addr, Token: "t0k", CAFile: cert,
			Runners: []schedulers.Runner{scoreRunner{1}, scoreRunner{2}}, Poll: 50 * time.Millisecond})
		done <- result{stats, err}
	}()
	for i, tr := range trials {
		if out := tr.outcome(t); out.Status != trial.SUCCEEDED || out.Results["score"] != []string{"1", "2", "3"}[i] {
			t.Errorf("trial %d: %s %v", i+1, out.Status, out.Results)
		}
	}
	// The experiment is over: the worker exits.
	pool.Close()
	r := <-done
	if r.err != nil {
		t.Fatalf("worker: %v\n%s", r.err, log.String())
	}
	if r.stats.Stored != 3 {
		t.Errorf("stats %+v, want 3 stored", r.stats)
	}
}
