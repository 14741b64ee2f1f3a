package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/json5"
	"github.com/benchtune/bench/internal/armfake"
)

// TestAzureMlosShippedConfigs runs the bench binary against the fake Azure
// REST API (internal/armfake) with mlos_bench's own shipped Azure configs,
// read from the folder that BENCH_TEST_MLOS_CONFIG names (a copy of
// mlos_bench/mlos_bench/config from microsoft/MLOS; bench does not ship
// those files). Their placeholders are filled from
// testdata/mlos-azure/global_config_azure.jsonc, found under the name the
// shipped CLI configs give it. Without BENCH_TEST_MLOS_CONFIG the test is
// skipped, also under BENCH_TEST_STRICT: CI has no network and cannot get
// the files (docs/cloud.md, "How this is tested").
func TestAzureMlosShippedConfigs(t *testing.T) {
	mlos := os.Getenv("BENCH_TEST_MLOS_CONFIG")
	if mlos == "" {
		t.Skip("BENCH_TEST_MLOS_CONFIG is not set: set it to a copy of microsoft/MLOS's mlos_bench/mlos_bench/config " +
			"to run mlos_bench's shipped Azure configs against the fake (opt-in: skipped even under BENCH_TEST_STRICT, CI cannot fetch them)")
	}
	mlos, err := filepath.Abs(mlos)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mlos, "cli", "cli-create-network-test.jsonc")); err != nil {
		t.Fatalf("BENCH_TEST_MLOS_CONFIG=%s is not mlos_bench's config folder: %v", mlos, err)
	}
	testdata, err := filepath.Abs(filepath.Join("testdata", "mlos-azure"))
	if err != nil {
		t.Fatal(err)
	}
	const clientID, secret = "11111111-2222-3333-4444-555555555555", "cli-e2e-client-secret"
	srv := azureFake(t, armfake.Options{ClientID: clientID, ClientSecret: secret, RetryAfter: "0",
		ResourceGroup: "mlos-autotuning-test"}, clientID, secret)
	// The search path: the test globals, mlos_bench's config folder and its
	// experiments folder (as the shipped CLI configs list them).
	paths := []string{"--config_path", testdata, "--config_path", mlos, "--config_path", filepath.Join(mlos, "experiments")}
	bench := func(t *testing.T, dir string, args ...string) result {
		t.Helper()
		return runBench(t, dir, append(append([]string{}, paths...), args...)...)
	}
	// score.jsonc is the benchmark that follows the shipped environments:
	// a VMEnv, NetworkEnv or SaaSEnv alone ends its run READY, which is no
	// result (as in mlos_bench).
	scored := func(t *testing.T, env string) string {
		dir := t.TempDir()
		write(t, dir, "score.jsonc", `{"name": "score", "class": "mlos_bench.environments.LocalEnv",
			"config": {"run": ["echo score=1.5"], "results_stdout_pattern": "^(score)=([0-9.]+)$"}}`, 0o644)
		write(t, dir, "root-scored.jsonc", `{"name": "shipped env and a score", "class": "mlos_bench.environments.CompositeEnv",
			"config": {"include_children": ["`+env+`", "score.jsonc"]}}`, 0o644)
		return dir
	}

	// (a) cli/cli-create-network-test.jsonc as shipped: the network
	// environment with its services from the CLI config's top level and the
	// experiment globals experiment_create-network-test.jsonc.
	t.Run("network-cli", func(t *testing.T) {
		dir := t.TempDir()
		r := bench(t, dir, "--config", "cli/cli-create-network-test.jsonc")
		// A NetworkEnv alone ends its run READY: the trial is stored
		// READY and the run fails naming it, as in mlos_bench.
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "ended their run READY") {
			t.Errorf("exit %d, want a failure naming the READY trial\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "create-network-test"); len(rows) != 1 || rows[1] != "READY" {
			t.Errorf("trials %v, want one READY", rows)
		}
		checkShippedVNet(t, srv, r)
		// teardown is false in the shipped CLI config: nothing deleted.
		if n := srv.CountCalls("POST", "/virtualNetwork/mlos-autotuning-test-vnet-eastus/delete"); n != 0 {
			t.Errorf("%d deprovisioning requests with teardown false", n)
		}
	})
	// The same, followed by a score: a SUCCEEDED trial.
	t.Run("network-scored", func(t *testing.T) {
		dir := scored(t, "environments/network/virtual-network-environment.jsonc")
		r := bench(t, dir, "--config", "cli/cli-create-network-test.jsonc", "--environment", "root-scored.jsonc",
			"--experiment_id", "create-network-scored")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "create-network-scored"); rows[1] != "SUCCEEDED" {
			t.Errorf("trials %v", rows)
		}
		checkShippedVNet(t, srv, r)
		// deprovision_on_teardown is false in the shipped environment.
		if n := srv.CountCalls("POST", "/virtualNetwork/mlos-autotuning-test-vnet-eastus/delete"); n != 0 {
			t.Errorf("%d deprovisioning requests with deprovision_on_teardown false", n)
		}
	})

	// (b) A VMEnv boot: cli/azure-redis-bench.jsonc run as its header says,
	// with --globals experiments/experiment_RedisBench.jsonc, its
	// environment replaced by environments/vm/azure/provision-ubuntu-vm.jsonc
	// with the services root-azure-redis.jsonc includes for it
	// (services/remote/azure/service-auth.jsonc, service-linux-vm-ops.jsonc),
	// deploying the shipped ARM template azuredeploy-ubuntu-vm.jsonc.
	// The rest of root-azure-redis.jsonc cannot run here: see docs/cloud.md.
	t.Run("vm-boot", func(t *testing.T) {
		// experiment_RedisBench.jsonc names its own resource group.
		srv := azureFake(t, armfake.Options{ClientID: clientID, ClientSecret: secret, RetryAfter: "0",
			ResourceGroup: "os-autotune"}, clientID, secret)
		dir := t.TempDir()
		write(t, dir, "score.jsonc", `{"name": "score", "class": "mlos_bench.environments.LocalEnv",
			"config": {"run": ["echo score=1.5"], "results_stdout_pattern": "^(score)=([0-9.]+)$"}}`, 0o644)
		write(t, dir, "root-vm-scored.jsonc", `{"name": "shipped VM and a score", "class": "mlos_bench.environments.CompositeEnv",
			"include_services": ["services/remote/azure/service-auth.jsonc", "services/remote/azure/service-linux-vm-ops.jsonc"],
			"config": {"include_children": ["environments/vm/azure/provision-ubuntu-vm.jsonc", "score.jsonc"]}}`, 0o644)
		r := bench(t, dir, "--config", "cli/azure-redis-bench.jsonc", "--globals", "experiment_RedisBench.jsonc",
			"--environment", "root-vm-scored.jsonc", "--log_file", "shipped-vm.log")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		// storage/sqlite.jsonc: mlos_bench.sqlite in the working folder.
		if rows := trialRows(t, filepath.Join(dir, "mlos_bench.sqlite"), "RedisBench"); rows[1] != "SUCCEEDED" {
			t.Errorf("trials %v", rows)
		}
		vm, ok := srv.VM("os-autotune-linux-vm")
		// vmSize from experiment_RedisBench.jsonc (its tunable_params_map
		// gives provision no tunables); the shipped CLI config has
		// teardown false, so the VM stays running. The experiment's
		// deploymentName reaches neither provision-ubuntu-vm.jsonc (not in
		// its required_args) nor the service (not a key of its config): the
		// deployment is named $vmName-deployment, as in mlos_bench.
		if !ok || vm.Size != "Standard_B2s" || vm.Location != "westus2" || vm.Power != "running" || vm.Deployment != "os-autotune-linux-vm-deployment" {
			t.Errorf("VM %+v (%v): want Standard_B2s in westus2 from deployment os-autotune-linux-vm-deployment, running", vm, ok)
		}
		params, _ := srv.DeploymentParams("os-autotune-linux-vm-deployment")
		if params == nil {
			t.Fatalf("no deployment os-autotune-linux-vm-deployment\n%s", r.stderr)
		}
		if params["ubuntuOSVersion"] != "18.04-LTS" || params["virtualNetworkName"] != "mlos-2vms-vnet" || params["subnetName"] != "mlos-2vms-subnet" {
			t.Errorf("deployment parameters %v", params)
		}
		// The defaults of the template's parameters, evaluated by the fake:
		// dnsLabelPrefix is toLower(format(vmName, uniqueString(resourceGroup().id))).
		label, _ := params["dnsLabelPrefix"].(string)
		if !strings.HasPrefix(label, "os-autotune-linux-vm-") || len(label) != len("os-autotune-linux-vm-")+13 || params["location"] != "westus2" {
			t.Errorf("deployment parameters %v: want dnsLabelPrefix of the VM name and uniqueString(resourceGroup().id)", params)
		}
		// The outputs, read with reference() from the public IP address.
		outs, _ := srv.DeploymentOutputs("os-autotune-linux-vm-deployment")
		if want := "ssh mlos@" + label + ".westus2.cloudapp.azure.com"; outs["sshCommand"] != want || outs["adminUsername"] != "mlos" {
			t.Errorf("deployment outputs %v, want sshCommand %q", outs, want)
		}
		if _, ok := params["storageAccountName"]; ok {
			t.Errorf("storageAccountName is not a parameter of the template but was sent: %v", params)
		}
		// The template's own expressions, evaluated by the fake as ARM does.
		nic, ok := srv.Resource("Microsoft.Network/networkInterfaces/os-autotune-linux-vm-NetInt")
		if !ok {
			t.Fatalf("no network interface named by variables('networkInterfaceName')\n%s", r.stderr)
		}
		nsgID := nic["properties"].(map[string]any)["networkSecurityGroup"].(map[string]any)["id"]
		if nsgID != "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/os-autotune/providers/Microsoft.Network/networkSecurityGroups/os-autotune-linux-vm-NSG" {
			t.Errorf("NIC's NSG id %v", nsgID)
		}
		ip, ok := srv.Resource("Microsoft.Network/publicIPAddresses/os-autotune-linux-vm-PublicIP")
		if got, _ := ip["properties"].(map[string]any)["dnsSettings"].(map[string]any)["domainNameLabel"].(string); !ok || got != label {
			t.Errorf("public IP %v: want the DNS label %q", ip, label)
		}
		// if(equals(authenticationType, 'password'), null(), variables('linuxConfiguration'))
		// with the default sshPublicKey: the SSH configuration, its path formatted.
		vmRes, _ := srv.Resource("Microsoft.Compute/virtualMachines/os-autotune-linux-vm")
		osProfile, _ := vmRes["properties"].(map[string]any)["osProfile"].(map[string]any)
		lc, _ := osProfile["linuxConfiguration"].(map[string]any)
		keys, _ := lc["ssh"].(map[string]any)["publicKeys"].([]any)
		if len(keys) != 1 || keys[0].(map[string]any)["path"] != "/home/mlos/.ssh/authorized_keys" || osProfile["customData"] != "" {
			t.Errorf("VM osProfile %v", osProfile)
		}
		for _, s := range []string{r.stdout, r.stderr, readString(t, filepath.Join(dir, "shipped-vm.log"))} {
			if strings.Contains(s, secret) {
				t.Error("the client secret reached the output or the log")
			}
		}
	})

	// (c) A SaaS configuration trial: environments/saas/azure-flex-db.jsonc
	// (a MySQL flexible server, services/remote/azure/service-flex-mysql.jsonc,
	// tunables environments/apps/mysql/mysql-tunables.jsonc).
	names := mysqlTunableNames(t, filepath.Join(mlos, "environments", "apps", "mysql", "mysql-tunables.jsonc"), "mysql-innodb", "mysql-buffer")
	addServer := func(name string) {
		cfgs := map[string]armfake.DBConfig{}
		for _, n := range names {
			cfgs[n] = armfake.DBConfig{Value: "1"}
		}
		srv.AddServer("Microsoft.DBforMySQL", "flexibleServers", name, cfgs)
	}
	saas := func(t *testing.T, dir, exp, vm string) result {
		t.Helper()
		write(t, dir, "cli-saas.jsonc", `{
			"environment": "root-scored.jsonc",
			"globals": ["global_config_azure.jsonc"],
			"services": ["services/remote/azure/service-auth.jsonc"],
			"experiment_id": "`+exp+`"
		}`, 0o644)
		write(t, dir, "server.jsonc", `{"vmName": "`+vm+`"}`, 0o644)
		return bench(t, dir, "--config", "cli-saas.jsonc", "--globals", "server.jsonc")
	}
	// As shipped, mlos_bench's requests: Azure answers the configuration
	// change 202 Accepted, which mlos_bench's service takes for a failure.
	t.Run("saas-as-shipped", func(t *testing.T) {
		addServer("mlos-shipped-db")
		dir := scored(t, "environments/saas/azure-flex-db.jsonc")
		r := saas(t, dir, "shipped-saas", "mlos-shipped-db")
		if r.code == 0 {
			t.Fatalf("exit 0, want the setup to fail on a 202 answer\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
		}
		if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "shipped-saas"); rows[1] != "FAILED" {
			t.Errorf("trials %v, want FAILED", rows)
		}
		if !strings.Contains(r.stderr, "bench_azure_fixes") {
			t.Errorf("the error does not name bench_azure_fixes\n%s", r.stderr)
		}
	})
	// The shipped environment and tunables, with the service config
	// shadowed (the working folder is searched first) by the same service
	// with bench_azure_fixes: a SUCCEEDED trial setting the defaults.
	t.Run("saas-fixes", func(t *testing.T) {
		addServer("mlos-shipped-db-fixes")
		dir := scored(t, "environments/saas/azure-flex-db.jsonc")
		shipped, err := os.ReadFile(filepath.Join(mlos, "services", "remote", "azure", "service-flex-mysql.jsonc"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := json5.Parse(shipped)
		if err != nil {
			t.Fatal(err)
		}
		svc := doc.Value().(map[string]any)
		svc["config"].(map[string]any)["bench_azure_fixes"] = true
		data, err := json.Marshal(svc)
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "services/remote/azure/service-flex-mysql.jsonc", string(data), 0o644)
		r := saas(t, dir, "shipped-saas-fixes", "mlos-shipped-db-fixes")
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		if rows := trialRows(t, filepath.Join(dir, "bench.sqlite"), "shipped-saas-fixes"); rows[1] != "SUCCEEDED" {
			t.Errorf("trials %v", rows)
		}
		db, _ := srv.DBServer("Microsoft.DBforMySQL", "flexibleServers", "mlos-shipped-db-fixes")
		// Raw tunable values, as mlos_bench sends them (meta's value_suffix
		// is for scripts only).
		for n, want := range map[string]string{"innodb_buffer_pool_instances": "8", "innodb_flush_method": "fsync", "innodb_log_buffer_size": "16"} {
			if got := db.Configs[n].Value; got != want {
				t.Errorf("%s = %q, want %q", n, got, want)
			}
		}
		if db.Updates == 0 {
			t.Error("no configuration update reached the server")
		}
	})
}

// checkShippedVNet checks the network that the shipped network
// environment and ARM template make with the experiment's globals.
func checkShippedVNet(t *testing.T, srv *armfake.Server, r result) {
	t.Helper()
	vnet, ok := srv.VNet("mlos-autotuning-test-vnet-eastus")
	if !ok {
		t.Fatalf("no virtual network $resourceGroup-vnet-$location\nstderr: %s", r.stderr)
	}
	if vnet["location"] != "eastus" {
		t.Errorf("network location %v", vnet["location"])
	}
	// The subnet's NSG, by the template's resourceId() expression.
	subnets, _ := vnet["properties"].(map[string]any)["subnets"].([]any)
	if len(subnets) != 1 {
		t.Fatalf("subnets %v", subnets)
	}
	sub := subnets[0].(map[string]any)
	nsgID, _ := sub["properties"].(map[string]any)["networkSecurityGroup"].(map[string]any)["id"].(string)
	if sub["name"] != "default" || nsgID != "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/mlos-autotuning-test/providers/Microsoft.Network/networkSecurityGroups/mlos-autotuning-test-vnet-eastus-default-nsg" {
		t.Errorf("subnet %v", sub)
	}
	nsg, ok := srv.Resource("Microsoft.Network/networkSecurityGroups/mlos-autotuning-test-vnet-eastus-default-nsg")
	if !ok {
		t.Fatalf("no network security group $vnetName-$subnetName-nsg")
	}
	rule := nsg["properties"].(map[string]any)["securityRules"].([]any)[0].(map[string]any)["properties"].(map[string]any)
	src, _ := rule["sourceAddressPrefixes"].([]any)
	if len(src) != 3 || src[0] != "131.107.0.0/16" {
		t.Errorf("NSG source prefixes %v, want the experiment's three", rule["sourceAddressPrefixes"])
	}
}

// mysqlTunableNames lists the parameters of the named groups of a tunables
// file.
func mysqlTunableNames(t *testing.T, file string, groups ...string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json5.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	all := doc.Value().(map[string]any)
	var out []string
	for _, g := range groups {
		params, _ := all[g].(map[string]any)["params"].(map[string]any)
		for n := range params {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		t.Fatalf("%s: no parameters in %v", file, groups)
	}
	return out
}
