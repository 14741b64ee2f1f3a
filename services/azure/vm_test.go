package azure

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/armfake"
	"github.com/benchtune/bench/services"
)

func newVM(t *testing.T, srv *armfake.Server, cfg map[string]any, globals map[string]any) *VMService {
	t.Helper()
	svc, err := newSvc(t, VMClassFull, cfg, globals, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	return svc.(*VMService)
}

func TestVMConfigErrors(t *testing.T) {
	srv := StartFake(t, armfake.Options{})
	auth := armAuth(srv)
	base := func(extra map[string]any) map[string]any {
		c := vmConfig(srv)
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	tests := []struct {
		name string
		cfg  map[string]any
		auth services.Auth
		want string
	}{
		{"unknown key", base(map[string]any{"vm_name": "x"}), auth, `/config/vm_name: unknown config key "vm_name"`},
		{"no subscription", base(map[string]any{"subscription": ""}), auth, "/config/subscription: the Azure subscription id is required"},
		{"no auth", base(nil), nil, "AzureVMService needs an authentication service listed before it"},
		{"missing template", base(map[string]any{"deploymentTemplatePath": "azure/none.jsonc"}), auth, "/config/deploymentTemplatePath: reading the ARM template"},
		{"not a template", base(map[string]any{"deploymentTemplatePath": "azure/services/service-auth.jsonc"}), auth, "is not an ARM template"},
		{"bad poll", base(map[string]any{"pollTimeout": -1}), auth, "/config/pollTimeout: must be a number of seconds"},
		{"custom data twice", base(map[string]any{"customDataFile": "azure/arm-templates/ubuntu-vm.jsonc",
			"deploymentTemplateParameters": map[string]any{"customData": "x"}}), auth, "/config/customDataFile: give customDataFile or the customData"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a services.Auth
			if tc.auth != nil {
				a = tc.auth
			}
			_, err := newSvc(t, VMClassShort, tc.cfg, nil, a)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestVMLifecycle provisions a VM from the template, with the deployment
// parameters templated from the globals and overridden by the environment,
// then starts, stops, deallocates, restarts and deprovisions it.
func TestVMLifecycle(t *testing.T) {
	srv := StartFake(t, armfake.Options{Polls: 2, RetryAfter: "0"})
	ctx := context.Background()
	vm := newVM(t, srv, vmConfig(srv), map[string]any{"vmName": "bench-vm-1", "location": "eastus", "resourceGroup": srv.ResourceGroup()})
	params := services.Params{"vmSize": "Standard_B4ms", "unrelated": "x"}
	got, err := vm.ProvisionHost(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got["deploymentName"] != "bench-vm-1-deployment" || got["vmName"] != "bench-vm-1" || got["vmNicName"] != "bench-vm-1-nic" {
		t.Errorf("ProvisionHost returned %v", got)
	}
	v, ok := srv.VM("bench-vm-1")
	if !ok || v.Power != "running" || v.Size != "Standard_B4ms" || v.Location != "eastus" {
		t.Fatalf("VM = %+v, %v", v, ok)
	}
	dp, _ := srv.DeploymentParams("bench-vm-1-deployment")
	// As mlos_bench's DictTemplater: $location comes from the parameters
	// themselves first, $resourceGroup (not among them) from the globals.
	if dp["virtualNetworkName"] != "bench-rg-westus2-vnet" {
		t.Errorf("virtualNetworkName = %v (want the templated value)", dp["virtualNetworkName"])
	}
	if _, ok := dp["unrelated"]; ok {
		t.Errorf("a parameter the template does not declare was sent: %v", dp)
	}
	if _, ok := srv.Resource("Microsoft.Network/networkInterfaces/bench-vm-1-nic"); !ok {
		t.Error("the NIC was not deployed")
	}
	p := services.Params{"vmName": "bench-vm-1"}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"stop", func() error { return vm.StopHost(ctx, p, false) }, "stopped"},
		{"start", func() error { return vm.StartHost(ctx, p) }, "running"},
		{"restart", func() error { return vm.RestartHost(ctx, p, false) }, "running"},
		{"shutdown", func() error { return vm.Shutdown(ctx, p, true) }, "stopped"},
		{"start again", func() error { return vm.StartHost(ctx, p) }, "running"},
		{"deallocate", func() error { return vm.DeallocateHost(ctx, p) }, "deallocated"},
		{"start after deallocate", func() error { return vm.StartHost(ctx, p) }, "running"},
		{"deprovision", func() error { return vm.DeprovisionHost(ctx, p) }, "deallocated"},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if v, _ := srv.VM("bench-vm-1"); v.Power != st.want {
			t.Fatalf("after %s the VM is %s, want %s", st.name, v.Power, st.want)
		}
	}
	if n := srv.CountCalls(http.MethodPost, "/powerOff"); n != 2 {
		t.Errorf("%d powerOff calls, want 2", n)
	}
	var skip int
	for _, c := range srv.Calls() {
		if strings.Contains(c, "skipShutdown=true") {
			skip++
		}
	}
	if skip != 1 {
		t.Errorf("%d forced power-offs, want 1", skip)
	}
	// Operations were followed through their Azure-AsyncOperation URLs.
	if n := srv.CountCalls(http.MethodGet, "/providers/Microsoft.Fake/operations/"); n < 8*3 {
		t.Errorf("only %d operation polls", n)
	}
}

// TestVMProvisionIsIdempotent re-runs the provisioning: the deployment is
// updated in place (200), the VM is not duplicated, and a deployment left
// active by an interrupted run is waited for.
func TestVMProvisionIsIdempotent(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	vm := newVM(t, srv, vmConfig(srv), map[string]any{"vmName": "idem-vm"})
	for i := range 2 {
		if _, err := vm.ProvisionHost(ctx, services.Params{}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if n := srv.CountCalls(http.MethodPut, "/deployments/idem-vm-deployment"); n != 2 {
		t.Errorf("%d PUTs of the deployment, want 2", n)
	}
	// A stopped VM is brought back by start, not re-created.
	srv.SetPower("idem-vm", "stopped")
	if err := vm.StartHost(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	// A deployment still running (an interrupted earlier run): the PUT gets
	// 409 DeploymentActive, the service waits for it and deploys again.
	srv2 := StartFake(t, armfake.Options{Polls: 3, RetryAfter: "0"})
	vm2 := newVM(t, srv2, vmConfig(srv2), map[string]any{"vmName": "busy-vm"})
	// Start a deployment and abandon it.
	ctx2, cancel := context.WithCancel(ctx)
	go func() {
		time.Sleep(5 * time.Millisecond)
		cancel()
	}()
	_, _ = vm2.ProvisionHost(ctx2, services.Params{})
	if _, err := vm2.ProvisionHost(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv2.VM("busy-vm"); !ok {
		t.Fatal("no VM")
	}
}

// TestVMThrottlingAndTransientErrors: 429 with Retry-After and 5xx answers
// are retried with backoff by the pipeline, on the action and on polls.
func TestVMThrottlingAndTransientErrors(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	vm := newVM(t, srv, vmConfig(srv), map[string]any{"vmName": "throttled-vm"})
	if _, err := vm.ProvisionHost(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	srv.Fail(http.MethodPost, "/virtualMachines/throttled-vm/powerOff", http.StatusTooManyRequests, 1, "1")
	srv.Fail(http.MethodGet, "/operations/", http.StatusInternalServerError, 1, "")
	srv.Fail(http.MethodGet, "/instanceView", http.StatusServiceUnavailable, 2, "")
	start := time.Now()
	if err := vm.StopHost(ctx, services.Params{}, false); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < time.Second {
		t.Errorf("the 429's Retry-After of 1 s was not honoured (took %s)", el)
	}
	if n := srv.CountCalls(http.MethodPost, "/powerOff"); n != 2 {
		t.Errorf("%d powerOff calls, want 2 (one throttled, one retried)", n)
	}
	if v, _ := srv.VM("throttled-vm"); v.Power != "stopped" {
		t.Errorf("VM is %s", v.Power)
	}
	// More failures than requestTotalRetries: a clear error.
	cfg := vmConfig(srv)
	cfg["requestTotalRetries"] = 2
	vm2 := newVM(t, srv, cfg, map[string]any{"vmName": "throttled-vm"})
	srv.Fail(http.MethodPost, "/start", http.StatusServiceUnavailable, 5, "")
	err := vm2.StartHost(ctx, services.Params{})
	if err == nil || !strings.Contains(err.Error(), "HTTP 503 ServiceUnavailable") || !strings.Contains(err.Error(), "VM throttled-vm: start") {
		t.Fatalf("error = %v", err)
	}
	if n := srv.CountCalls(http.MethodPost, "/start"); n != 3 {
		t.Errorf("%d start calls, want 3 (1 + 2 retries)", n)
	}
}

// TestVMNeverReachesState: an operation that stays in progress ends in a
// timeout (services.ErrTimeout, the TIMED_OUT status) after pollTimeout; a
// failed operation is an error naming the VM.
func TestVMNeverReachesState(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	cfg := vmConfig(srv)
	cfg["pollTimeout"] = 0.5
	vm := newVM(t, srv, cfg, map[string]any{"vmName": "stuck-vm"})
	if _, err := vm.ProvisionHost(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	srv.Stick("stuck-vm")
	start := time.Now()
	err := vm.RestartHost(ctx, services.Params{}, false)
	if !errors.Is(err, services.ErrTimeout) || !strings.Contains(err.Error(), "VM stuck-vm: restart") {
		t.Fatalf("error = %v, want a timeout", err)
	}
	if el := time.Since(start); el < 400*time.Millisecond || el > 5*time.Second {
		t.Errorf("gave up after %s, want about pollTimeout (0.5 s)", el)
	}
	// An operation that succeeds but leaves the VM in another power state:
	// the service waits for the state, then times out saying which it is.
	if _, err := vm.ProvisionHost(ctx, services.Params{"vmName": "frozen-vm"}); err != nil {
		t.Fatal(err)
	}
	srv.SetPower("frozen-vm", "stopped")
	srv.FreezePower("frozen-vm")
	err = vm.StartHost(ctx, services.Params{"vmName": "frozen-vm"})
	if !errors.Is(err, services.ErrTimeout) || !strings.Contains(err.Error(), "the VM is stopped, not running") {
		t.Fatalf("error = %v", err)
	}
	if n := srv.CountCalls(http.MethodGet, "/virtualMachines/frozen-vm/instanceView"); n < 3 {
		t.Errorf("the power state was read %d times", n)
	}
	// A deployment that never finishes times out the same way.
	srv.Stick("stuck-vm-2-deployment")
	_, err = vm.ProvisionHost(ctx, services.Params{"vmName": "stuck-vm-2"})
	if !errors.Is(err, services.ErrTimeout) || !strings.Contains(err.Error(), "deployment stuck-vm-2-deployment") {
		t.Fatalf("provision error = %v", err)
	}
	// A failed operation.
	srv.FailOperations("failing-vm-deployment")
	if _, err := vm.ProvisionHost(ctx, services.Params{"vmName": "failing-vm"}); err == nil {
		t.Fatal("the failing deployment succeeded")
	} else if !strings.Contains(err.Error(), "provisioning state Failed") {
		t.Errorf("error = %v", err)
	}
	// A VM that does not exist.
	err = vm.StartHost(ctx, services.Params{"vmName": "no-such-vm"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404 ResourceNotFound") {
		t.Errorf("error = %v", err)
	}
	// A missing template parameter is refused by ARM with its reason.
	cfg2 := vmConfig(srv)
	delete(cfg2["deploymentTemplateParameters"].(map[string]any), "location")
	vm2 := newVM(t, srv, cfg2, nil)
	_, err = vm2.ProvisionHost(ctx, services.Params{"vmName": "x"})
	if err == nil || !strings.Contains(err.Error(), "InvalidTemplate") || !strings.Contains(err.Error(), "'location'") {
		t.Errorf("error = %v", err)
	}
	// No vmName anywhere.
	cfg3 := vmConfig(srv)
	delete(cfg3["deploymentTemplateParameters"].(map[string]any), "vmName")
	vm3 := newVM(t, srv, cfg3, nil)
	if err := vm3.StartHost(ctx, services.Params{}); err == nil || !strings.Contains(err.Error(), "needs the vmName parameter") {
		t.Errorf("error = %v", err)
	}
}

// TestVMAuthFailures: a token ARM refuses is a clear error that never
// quotes the token.
func TestVMAuthFailures(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	for name, tok := range map[string]string{
		"invalid":  "not-a-token-the-fake-issued",
		"expired":  srv.IssueToken(armfake.AudienceARM, -time.Minute),
		"audience": srv.IssueToken(armfake.AudienceKeyVault, time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			svc, err := newSvc(t, VMClassShort, vmConfig(srv), map[string]any{"vmName": "auth-vm"}, staticAuth{tok})
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.(*VMService).ProvisionHost(ctx, services.Params{})
			if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
				t.Fatalf("error = %v", err)
			}
			if strings.Contains(err.Error(), tok) {
				t.Errorf("the error quotes the token: %v", err)
			}
		})
	}
	// An operation URL on another host is not followed (the token would go
	// there).
	svc0, err := newSvc(t, VMClassShort, vmConfig(srv), map[string]any{"vmName": "auth-vm"}, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc0.(*VMService).ProvisionHost(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	srv.OperationsAt("https://elsewhere.example")
	err = svc0.(*VMService).StartHost(ctx, services.Params{})
	if err == nil || !strings.Contains(err.Error(), "refusing to follow a URL on another host") {
		t.Errorf("error = %v", err)
	}
	// The token is never sent over plain HTTP.
	t.Setenv(EnvTestEndpoint, "http://127.0.0.1:1")
	svc, err := newSvc(t, VMClassShort, vmConfig(srv), map[string]any{"vmName": "auth-vm"}, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	err = svc.(*VMService).StartHost(ctx, services.Params{})
	if err == nil || !strings.Contains(err.Error(), "refusing to send an Azure token over http") {
		t.Errorf("error = %v", err)
	}
}

// TestVMRunCommand runs scripts through Run Command: the lines form one
// script, the environment reaches it as protected parameters (environment
// variables, never script text), exit codes and output come back.
func TestVMRunCommand(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	vm := newVM(t, srv, vmConfig(srv), map[string]any{"vmName": "exec-vm"})
	if _, err := vm.ProvisionHost(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	evil := `x'; echo INJECTED; '`
	res, err := vm.RemoteExec(ctx, services.RemoteExecRequest{
		Script:      []string{"cd /", "echo \"dir=$(pwd) v=$TUNED\"", "echo oops >&2"},
		Params:      services.Params{"location": "westus2"},
		Env:         map[string]string{"TUNED": evil},
		CommandName: "bench-env-run",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "dir=/ v="+evil+"\n" || res.Stderr != "oops\n" {
		t.Errorf("result = %+v", res)
	}
	if len(res.Lines) != 1 || res.Lines[0].Start.IsZero() {
		t.Errorf("lines = %+v", res.Lines)
	}
	rc := srv.RunCommands()
	if len(rc) != 1 || rc[0].Name != "bench-env-run" || strings.Contains(rc[0].Script, "INJECTED") || rc[0].Params["TUNED"] != evil {
		t.Errorf("run command = %+v", rc)
	}
	// A failing script: its exit code, no error.
	res, err = vm.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"echo before", "exit 3"},
		Params: services.Params{"location": "westus2", "commandName": "my cmd!"}})
	if err != nil || res.ExitCode != 3 || res.Stdout != "before\n" {
		t.Errorf("res = %+v, err = %v", res, err)
	}
	if rc := srv.RunCommands(); rc[len(rc)-1].Name != "my-cmd" {
		t.Errorf("command name = %q", rc[len(rc)-1].Name)
	}
	// Run Command's own timeout: TIMED_OUT.
	res, err = vm.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"sleep 5"}, Timeout: time.Second,
		Params: services.Params{"location": "westus2"}, CommandName: "slow"})
	if !errors.Is(err, services.ErrTimeout) {
		t.Errorf("err = %v, want a timeout", err)
	}
	// The location defaults to the deployment parameter's; without one
	// anywhere: a clear error before any call.
	if _, err := vm.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"true"}, Params: services.Params{}}); err != nil {
		t.Errorf("with the deployment's location: %v", err)
	}
	cfg := vmConfig(srv)
	delete(cfg["deploymentTemplateParameters"].(map[string]any), "location")
	_, err = newVM(t, srv, cfg, map[string]any{"vmName": "exec-vm"}).RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"true"}, Params: services.Params{}})
	if err == nil || !strings.Contains(err.Error(), "needs the location parameter") {
		t.Errorf("err = %v", err)
	}
	// A stopped VM refuses commands (409): an error naming the VM.
	if err := vm.StopHost(ctx, services.Params{}, false); err != nil {
		t.Fatal(err)
	}
	_, err = vm.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"true"}, Params: services.Params{"location": "westus2"}, CommandName: "x"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 409") || !strings.Contains(err.Error(), "exec-vm") {
		t.Errorf("err = %v", err)
	}
}
