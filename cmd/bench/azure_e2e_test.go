package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/armfake"
)

// TestAzureVMExperiment runs a whole experiment with the bench binary
// against the fake Azure REST API (internal/armfake): a CLI config like
// mlos_bench's azure-redis-bench.jsonc, a root environment that provisions
// an Azure VM (VMEnv) and runs a benchmark on it through Run Command
// (RemoteEnv), the test globals file filling the service configs'
// placeholders, and AzureAuthService logging in with a service principal
// through azidentity. It checks the stored result, the VM's state, and
// that neither the client secret nor any token reaches the output, the log
// file or the database.
func TestAzureVMExperiment(t *testing.T) {
	const clientID, secret = "11111111-2222-3333-4444-555555555555", "cli-e2e-client-secret"
	srv := armfake.New(armfake.Options{ClientID: clientID, ClientSecret: secret, RetryAfter: "0"})
	defer srv.Close()
	dir := t.TempDir()
	srv.ScriptDir(t.TempDir())
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME",
		"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET", "AZURE_TOKEN_CREDENTIALS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("BENCH_AZURE_TEST_ENDPOINT", srv.URL())
	t.Setenv("BENCH_AZURE_TEST_CA_FILE", ca)
	t.Setenv("AZURE_AUTHORITY_HOST", srv.URL())
	t.Setenv("AZURE_CLIENT_ID", clientID)
	t.Setenv("AZURE_CLIENT_SECRET", secret)
	t.Setenv("AZURE_TENANT_ID", srv.Tenant())
	src := filepath.Join("..", "..", "services", "azure", "testdata")
	err := filepath.WalkDir(filepath.Join(src, "azure"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		write(t, dir, rel, string(data), 0o644)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "azure-vm-bench.jsonc", `{
		"config_path": ["."],
		"environment": "azure/environments/root-azure-vm.jsonc",
		"globals": ["azure/globals/global-azure-test.jsonc"],
		"experiment_id": "azure-e2e",
		"teardown": true,
		"log_file": "azure-vm-bench.log",
		"log_level": "DEBUG"
	}`, 0o644)
	r := runBench(t, dir, "--config", "azure-vm-bench.jsonc", "--format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var sum struct {
		Trials, Succeeded int
		BestScores        map[string]any `json:"best_scores"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, r.stdout)
	}
	// The run script printed score=4<trial_id>.5 on the VM.
	if sum.Trials != 1 || sum.Succeeded != 1 || sum.BestScores["score"] != 41.5 {
		t.Errorf("summary %+v\nstderr: %s", sum, r.stderr)
	}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "azure-e2e"); rows[1] != "SUCCEEDED" {
		t.Errorf("trials %v", rows)
	}
	vm, ok := srv.VM("bench-test-vm")
	if !ok || vm.Size != "Standard_B4ms" || vm.Power != "deallocated" {
		t.Errorf("VM %+v (%v): want the default size, deallocated by the teardown", vm, ok)
	}
	if srv.TokenRequests() == 0 {
		t.Error("no token was requested from the fake Entra ID")
	}
	token := regexp.MustCompile(`fake\.[0-9a-f]{48}`)
	for name, text := range map[string]string{"stdout": r.stdout, "stderr": r.stderr,
		"log file": readString(t, filepath.Join(dir, "azure-vm-bench.log")), "database": readString(t, filepath.Join(dir, "bench.sqlite"))} {
		if strings.Contains(text, secret) || token.MatchString(text) {
			t.Errorf("the %s holds the client secret or a token", name)
		}
	}
}

func readString(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
