package azure

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/armfake"
	"github.com/benchtune/bench/services"
)

// credentialEnv are the variables azidentity's default chain reads; tests
// clear them so that the developer's own login is never used.
var credentialEnv = []string{
	"AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_CLIENT_CERTIFICATE_PATH",
	"AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_CLIENT_SEND_CERTIFICATE_CHAIN", "AZURE_FEDERATED_TOKEN_FILE",
	"AZURE_USERNAME", "AZURE_PASSWORD", "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "MSI_SECRET",
	"IMDS_ENDPOINT", "AZURE_TOKEN_CREDENTIALS", "AZURE_REGIONAL_AUTHORITY_NAME",
}

// StartFake starts the fake ARM server and points the Azure services at it
// through the test-only environment variables (its certificate trusted
// through BENCH_AZURE_TEST_CA_FILE, Entra ID through AZURE_AUTHORITY_HOST).
// It is exported for the end-to-end tests of package azure_test.
func StartFake(t testing.TB, opts armfake.Options) *armfake.Server {
	t.Helper()
	srv := armfake.New(opts)
	t.Cleanup(srv.Close)
	srv.ScriptDir(t.TempDir())
	ca := filepath.Join(t.TempDir(), "fake-ca.pem")
	if err := os.WriteFile(ca, srv.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range credentialEnv {
		t.Setenv(k, "") // restored when the test ends
		os.Unsetenv(k)
	}
	t.Setenv("PATH", "/usr/bin:/bin") // no az / azd CLI in the default chain
	t.Setenv(EnvTestEndpoint, srv.URL())
	t.Setenv(EnvTestCAFile, ca)
	t.Setenv("AZURE_AUTHORITY_HOST", srv.URL())
	return srv
}

// staticAuth hands out one token the fake issued.
type staticAuth struct{ tok string }

func (a staticAuth) AccessToken(context.Context) (string, error) { return a.tok, nil }

func armAuth(srv *armfake.Server) staticAuth {
	return staticAuth{srv.IssueToken(armfake.AudienceARM, time.Hour)}
}

// testdataDir is the config folder of the tests (the search path).
func testdataDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// newSvc builds a service of class through the registry on top of auth.
func newSvc(t testing.TB, class string, cfg map[string]any, globals map[string]any, auth services.Auth) (any, error) {
	t.Helper()
	// As environments.Builder does: globals replace the config's keys.
	if err := configs.MergeParameters(cfg, globals, nil, ""); err != nil {
		t.Fatal(err)
	}
	var parent *services.Stack
	if auth != nil {
		parent = services.NewStack(auth)
	}
	return services.New(context.Background(), services.Spec{Class: class, Config: cfg, Globals: globals, Parent: parent,
		SearchPath: []string{testdataDir(t)}})
}

// vmConfig is the config of service-linux-vm-ops.jsonc with the test
// globals filled in and fast polling.
func vmConfig(srv *armfake.Server) map[string]any {
	return map[string]any{
		"subscription":           srv.Subscription(),
		"resourceGroup":          srv.ResourceGroup(),
		"deploymentTemplatePath": "azure/arm-templates/ubuntu-vm.jsonc",
		"deploymentTemplateParameters": map[string]any{
			"location":           "westus2",
			"virtualNetworkName": "$resourceGroup-$location-vnet",
			"subnetName":         "default",
			"vmName":             "PLACEHOLDER",
			"vmSize":             "Standard_B2s",
		},
		"requestTimeout":       5,
		"requestBackoffFactor": 0.01,
		"pollInterval":         0.02,
		"pollTimeout":          10,
	}
}
