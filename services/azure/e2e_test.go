package azure_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/environments"
	_ "github.com/benchtune/bench/environments/all"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/internal/armfake"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/services/azure"
	"github.com/benchtune/bench/tunables"
)

// The end-to-end tests build environments from config files with the same
// keys and structure as mlos_bench's shipped Azure configs (services/
// remote/azure/service-*.jsonc, environments for a VM, a virtual network
// and a flexible server), with their placeholders filled from a test
// globals file, validated against the schemas, exactly as bench builds
// them, and run them against the fake ARM server: AzureAuthService logs in
// through azidentity's default chain against the fake Entra ID.

const (
	e2eClientID = "11111111-2222-3333-4444-555555555555"
	e2eSecret   = "e2e-client-secret-value"
)

type e2e struct {
	srv     *armfake.Server
	f       *envtest.Fixture
	globals map[string]any
}

func setupE2E(t *testing.T, opts armfake.Options) *e2e {
	t.Helper()
	opts.ClientID, opts.ClientSecret = e2eClientID, e2eSecret
	if opts.RetryAfter == "" {
		opts.RetryAfter = "0"
	}
	srv := azure.StartFake(t, opts)
	t.Setenv("AZURE_CLIENT_ID", e2eClientID)
	t.Setenv("AZURE_CLIENT_SECRET", e2eSecret)
	t.Setenv("AZURE_TENANT_ID", srv.Tenant())
	files := map[string]string{}
	err := filepath.WalkDir("testdata/azure", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata", p)
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f := envtest.New(t, files)
	doc, err := f.Loader.ReadDoc(f.Loader.Resolve("azure/globals/global-azure-test.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	globals, err := configs.Object(doc)
	if err != nil {
		t.Fatal(err)
	}
	if globals["subscription"] != srv.Subscription() || globals["resourceGroup"] != srv.ResourceGroup() {
		t.Fatalf("the test globals do not match the fake: %v", globals)
	}
	return &e2e{srv: srv, f: f, globals: globals}
}

func (e *e2e) build(t *testing.T, spec string, extra map[string]any, topServices ...string) (environments.Environment, map[string]any) {
	t.Helper()
	g := map[string]any{}
	for k, v := range e.globals {
		g[k] = v
	}
	for k, v := range extra {
		g[k] = v
	}
	tun, err := tunables.New()
	if err != nil {
		t.Fatal(err)
	}
	// Services given at the top level, as the CLI's "services" key does.
	svc, err := e.f.Builder.LoadServices(context.Background(), topServices, g, e.f.Services)
	if err != nil {
		t.Fatal(err)
	}
	env, err := e.f.Builder.LoadEnvironment(context.Background(), spec, tun, g, nil, svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	envtest.Open(t, env)
	return env, g
}

// TestE2EVMBoot provisions a VM (VMEnv) with a tunable VM size, boots it
// (OSEnv), runs a benchmark script on it through Run Command (RemoteEnv
// with wait_boot), reads its result, tears everything down, and sets it up
// again with another VM size, then another boot parameter (reboot).
func TestE2EVMBoot(t *testing.T) {
	e := setupE2E(t, armfake.Options{Polls: 2})
	ctx := context.Background()
	env, g := e.build(t, "azure/environments/root-azure-vm.jsonc", map[string]any{"trial_id": int64(7)})
	tun := env.Tunables()
	if err := tun.Assign(map[string]any{"vmSize": "Standard_B2ms"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Setup(ctx, tun, g); err != nil {
		t.Fatalf("setup: %v", err)
	}
	vm, ok := e.srv.VM("bench-test-vm")
	if !ok || vm.Size != "Standard_B2ms" || vm.Power != "running" || vm.Location != "westus2" {
		t.Fatalf("VM = %+v, %v", vm, ok)
	}
	dp, _ := e.srv.DeploymentParams("bench-test-vm-deployment")
	if dp["virtualNetworkName"] != "bench-vnet" || dp["location"] != "westus2" {
		t.Errorf("deployment parameters %v", dp)
	}
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("run: %+v", res)
	}
	if got := envtest.WithoutMeasurements(res.Metrics); got["score"] != 47.5 {
		t.Errorf("metrics = %v", got)
	}
	cmds := e.srv.RunCommands()
	var run *armfake.RunCommand
	for i := range cmds {
		if strings.HasSuffix(cmds[i].Name, "-run") {
			run = &cmds[i]
		}
	}
	if run == nil {
		t.Fatalf("no run script among %+v", cmds)
	}
	// The greeting (with a shell metacharacter) reached the script as an
	// environment variable, never as script text.
	if run.Params["greeting"] != "hello; touch /tmp/should-not-exist-bench-azure" || strings.Contains(run.Script, "touch") {
		t.Errorf("run command %+v", run)
	}
	if _, err := os.Stat("/tmp/should-not-exist-bench-azure"); err == nil {
		t.Error("a parameter value was executed")
	}
	// The OSEnv and the RemoteEnv's wait_boot started the VM through
	// AzureVMService.
	if n := e.srv.CountCalls("POST", "/virtualMachines/bench-test-vm/start"); n != 2 {
		t.Errorf("%d starts, want 2 (OSEnv, wait_boot)", n)
	}
	if err := env.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	// OSEnv's teardown shut the VM down, VMEnv's deallocated it.
	if vm, _ := e.srv.VM("bench-test-vm"); vm.Power != "deallocated" || e.srv.CountCalls("POST", "/powerOff") != 1 {
		t.Errorf("after teardown the VM is %s", vm.Power)
	}
	// A second trial with another VM size: the deployment is re-run in place.
	if err := tun.Assign(map[string]any{"vmSize": "Standard_B4ms"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Setup(ctx, tun, g); err != nil {
		t.Fatalf("second setup: %v", err)
	}
	if vm, _ := e.srv.VM("bench-test-vm"); vm.Size != "Standard_B4ms" {
		t.Errorf("VM size %s after the second setup", vm.Size)
	}
	// A third with another boot parameter: OSEnv reboots the VM.
	if err := tun.Assign(map[string]any{"idle": "mwait"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Setup(ctx, tun, g); err != nil {
		t.Fatalf("third setup: %v", err)
	}
	if n := e.srv.CountCalls("POST", "/virtualMachines/bench-test-vm/restart"); n != 1 {
		t.Errorf("%d restarts, want 1 (boot tunable changed)", n)
	}
}

// TestE2EVMStuck: a VM whose start never completes makes the setup fail
// with a timeout, not hang.
func TestE2EVMStuck(t *testing.T) {
	e := setupE2E(t, armfake.Options{})
	ctx := context.Background()
	env, g := e.build(t, "azure/environments/root-azure-vm.jsonc", map[string]any{"trial_id": int64(1)})
	// Provision first, then make the VM's operations hang.
	e.srv.Stick("bench-test-vm")
	err := env.Setup(ctx, env.Tunables(), g)
	if !errors.Is(err, services.ErrTimeout) || !strings.Contains(err.Error(), "VM bench-test-vm: start") {
		t.Fatalf("setup error = %v", err)
	}
}

// TestE2ENetwork runs the virtual network environment: provision on setup,
// delete on teardown (deprovision_on_teardown).
func TestE2ENetwork(t *testing.T) {
	e := setupE2E(t, armfake.Options{})
	ctx := context.Background()
	env, g := e.build(t, "azure/environments/virtual-network.jsonc", nil,
		"azure/services/service-auth.jsonc", "azure/services/service-virtual-network.jsonc")
	if err := env.Setup(ctx, env.Tunables(), g); err != nil {
		t.Fatalf("setup: %v", err)
	}
	const vnet = "bench-rg-vnet-westus2"
	if dp, _ := e.srv.DeploymentParams(vnet + "-deployment"); dp["subnetPrefix"] != "10.0.0.0/24" || dp["location"] != "westus2" {
		t.Errorf("deployment parameters %v", dp)
	}
	if _, ok := e.srv.VNet(vnet); !ok {
		t.Fatal("no virtual network")
	}
	if _, ok := e.srv.Resource("Microsoft.Network/networkSecurityGroups/" + vnet + "-default-nsg"); !ok {
		t.Error("no network security group")
	}
	if err := env.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.srv.VNet(vnet); ok {
		t.Error("the network was not deleted on teardown")
	}
}

// TestE2ESaaS runs a SaaS configuration trial on a MySQL flexible server:
// the tunable values are set in one batch, and the server is restarted
// because a static parameter changed.
func TestE2ESaaS(t *testing.T) {
	e := setupE2E(t, armfake.Options{})
	ctx := context.Background()
	e.srv.AddServer("Microsoft.DBforMySQL", "flexibleServers", "bench-test-vm", map[string]armfake.DBConfig{
		"innodb_buffer_pool_size":    {Value: "134217728", Static: true},
		"innodb_adaptive_hash_index": {Value: "ON"},
		"join_buffer_size":           {Value: "262144"},
	})
	env, g := e.build(t, "azure/environments/azure-flex-db.jsonc", nil)
	tun := env.Tunables()
	// Dynamic parameters only: no restart.
	if err := tun.Assign(map[string]any{"innodb_adaptive_hash_index": "OFF", "join_buffer_size": int64(4096)}); err != nil {
		t.Fatal(err)
	}
	if err := env.Setup(ctx, tun, g); err != nil {
		t.Fatalf("setup: %v", err)
	}
	db, _ := e.srv.DBServer("Microsoft.DBforMySQL", "flexibleServers", "bench-test-vm")
	if db.Configs["innodb_adaptive_hash_index"].Value != "OFF" || db.Configs["join_buffer_size"].Value != "4096" || db.Restarts != 0 || db.Updates != 1 {
		t.Fatalf("server after the first trial: %+v restarts %d updates %d", db.Configs, db.Restarts, db.Updates)
	}
	// A static parameter: the server is restarted.
	if err := tun.Assign(map[string]any{"innodb_buffer_pool_size": int64(268435456)}); err != nil {
		t.Fatal(err)
	}
	if err := env.Setup(ctx, tun, g); err != nil {
		t.Fatalf("second setup: %v", err)
	}
	db, _ = e.srv.DBServer("Microsoft.DBforMySQL", "flexibleServers", "bench-test-vm")
	if db.Configs["innodb_buffer_pool_size"].Value != "268435456" || db.Configs["innodb_buffer_pool_size"].Pending || db.Restarts != 1 {
		t.Errorf("server after the second trial: %+v restarts %d", db.Configs["innodb_buffer_pool_size"], db.Restarts)
	}
}
