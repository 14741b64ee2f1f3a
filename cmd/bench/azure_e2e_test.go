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
	srv := azureFake(t, armfake.Options{ClientID: clientID, ClientSecret: secret, RetryAfter: "0"}, clientID, secret)
	dir := azureConfigs(t)
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

// azureFake starts the fake Azure REST API and points the bench processes
// the test starts at it, logging in as the service principal clientID.
func azureFake(t *testing.T, opts armfake.Options, clientID, secret string) *armfake.Server {
	t.Helper()
	srv := armfake.New(opts)
	t.Cleanup(srv.Close)
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
	return srv
}

// azureConfigs copies the Azure test configs of services/azure/testdata
// into a fresh experiment folder.
func azureConfigs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
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
	return dir
}

func readString(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestAzureNetworkAndSaaSExperiments runs mlos_bench's other Azure example
// shapes with the bench binary against the fake: the network environment
// of cli-create-network-test (its services given at the top level of the
// CLI config) and a SaaS configuration trial on a MySQL flexible server.
// Each is followed by a LocalEnv that reports a score: a NetworkEnv or a
// SaaSEnv alone ends its run READY, which bench records as a failed trial.
func TestAzureNetworkAndSaaSExperiments(t *testing.T) {
	const clientID, secret = "11111111-2222-3333-4444-555555555555", "cli-e2e-client-secret"
	srv := azureFake(t, armfake.Options{ClientID: clientID, ClientSecret: secret, RetryAfter: "0"}, clientID, secret)
	dir := azureConfigs(t)
	write(t, dir, "score.jsonc", `{"name": "score", "class": "mlos_bench.environments.LocalEnv",
		"config": {"run": ["echo score=1.5"], "results_stdout_pattern": "^(score)=([0-9.]+)$"}}`, 0o644)
	for _, name := range []string{"virtual-network", "azure-flex-db"} {
		write(t, dir, "root-"+name+".jsonc", `{"name": "`+name+` and a score", "class": "mlos_bench.environments.CompositeEnv",
			"config": {"include_children": ["azure/environments/`+name+`.jsonc", "score.jsonc"]}}`, 0o644)
	}
	write(t, dir, "cli-create-network-test.jsonc", `{
		"config_path": ["."],
		"environment": "root-virtual-network.jsonc",
		"globals": ["azure/globals/global-azure-test.jsonc"],
		"services": ["azure/services/service-auth.jsonc", "azure/services/service-virtual-network.jsonc"],
		"experiment_id": "create-network-test",
		"teardown": false
	}`, 0o644)
	r := runBench(t, dir, "--config", "cli-create-network-test.jsonc")
	if r.code != 0 {
		t.Fatalf("network: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if _, ok := srv.VNet("bench-rg-vnet-westus2"); !ok {
		t.Errorf("no virtual network after the experiment\n%s", r.stderr)
	}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "create-network-test"); rows[1] != "SUCCEEDED" {
		t.Errorf("network trials %v", rows)
	}

	srv.AddServer("Microsoft.DBforMySQL", "flexibleServers", "bench-test-vm", map[string]armfake.DBConfig{
		"innodb_buffer_pool_size":    {Value: "1", Static: true},
		"innodb_adaptive_hash_index": {Value: "OFF"},
		"join_buffer_size":           {Value: "1"},
	})
	write(t, dir, "cli-flex-db.jsonc", `{
		"config_path": ["."],
		"environment": "root-azure-flex-db.jsonc",
		"globals": ["azure/globals/global-azure-test.jsonc"],
		"experiment_id": "flex-db",
		"teardown": false
	}`, 0o644)
	r = runBench(t, dir, "--config", "cli-flex-db.jsonc")
	if r.code != 0 {
		t.Fatalf("saas: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	db, _ := srv.DBServer("Microsoft.DBforMySQL", "flexibleServers", "bench-test-vm")
	// The default values of the tunables were set in one batch; the
	// static buffer pool size changed, so the server was restarted.
	if db.Configs["innodb_buffer_pool_size"].Value != "134217728" || db.Configs["innodb_adaptive_hash_index"].Value != "ON" ||
		db.Configs["join_buffer_size"].Value != "262144" || db.Updates != 1 || db.Restarts != 1 {
		t.Errorf("server: buffer pool %+v, hash index %+v, join buffer %+v, %d updates, %d restarts",
			db.Configs["innodb_buffer_pool_size"], db.Configs["innodb_adaptive_hash_index"], db.Configs["join_buffer_size"], db.Updates, db.Restarts)
	}
	if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "flex-db"); rows[1] != "SUCCEEDED" {
		t.Errorf("saas trials %v", rows)
	}
}
