package mock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/benchtune/bench/schemas"
	"github.com/benchtune/bench/services"
	"github.com/google/go-cmp/cmp"
)

// build builds a service from a config document, as the builder does.
func build(t *testing.T, text string, globals services.Params) any {
	t.Helper()
	doc, err := source.Parse("svc.jsonc", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.Service, doc); err != nil {
		t.Fatalf("mlos_bench's schema rejects the config: %v", err)
	}
	m := doc.Root.Value().(map[string]any)
	cfg, _ := m["config"].(map[string]any)
	svc, err := services.New(context.Background(), services.Spec{Class: m["class"].(string), Config: cfg, Globals: globals, Ref: doc.At()})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// TestEveryMockClassOfTheSchemasIsRegistered: each mock service class
// mlos_bench's service schemas name builds a service.
func TestEveryMockClassOfTheSchemasIsRegistered(t *testing.T) {
	var seen []string
	files, err := schemas.ClassNames("services")
	if err != nil {
		t.Fatal(err)
	}
	for p, classes := range files {
		if !strings.Contains(p, "mock") {
			continue
		}
		for _, c := range classes {
			seen = append(seen, c)
			if !slices.Contains(services.Classes(), c) {
				t.Errorf("%s: class %q is not registered", p, c)
			}
		}
	}
	if len(seen) != 8 {
		t.Errorf("found %d mock classes in the schemas, want 8: %v", len(seen), seen)
	}
	base := build(t, `{"class": "mlos_bench.tests.services.mock_service.MockServiceBase"}`, nil).(*Service)
	child := build(t, `{"class": "mlos_bench.tests.services.mock_service.MockServiceChild"}`, nil).(*Service)
	if base.SomeMethod() != "MockServiceBase: base.some_method" || child.SomeMethod() != "MockServiceChild: child.some_method" ||
		child.SomeOtherMethod() != "MockServiceChild: base.some_other_method" {
		t.Errorf("%s, %s, %s", base.SomeMethod(), child.SomeMethod(), child.SomeOtherMethod())
	}
}

func TestMockLocalExec(t *testing.T) {
	ctx := context.Background()
	tmp := filepath.Join(t.TempDir(), "work")
	svc := build(t, `{
		"class": "mlos_bench.tests.services.local.mock.mock_local_exec_service.MockLocalExecService",
		"config": {"temp_dir": "$base/work"}
	}`, services.Params{"base": filepath.Dir(tmp)})
	exec := svc.(services.LocalExec)
	marker := filepath.Join(t.TempDir(), "ran")
	res, err := exec.LocalExec(ctx, services.ExecRequest{Lines: []string{"touch " + marker, "exit 3"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Stdout != "" || res.Stderr != "" || len(res.Lines) != 2 || res.Lines[1].ExitCode != 0 {
		t.Errorf("got %+v", res)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the mock ran a command")
	}
	// Working directories as TempDirContextService: the configured
	// temp_dir, created, never removed.
	dir, cleanup, err := svc.(services.TempDirs).TempDir(ctx, "env")
	if err != nil || dir != tmp {
		t.Fatalf("TempDir = %q, %v; want %q", dir, err, tmp)
	}
	if err := cleanup(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(tmp); err != nil || !fi.IsDir() {
		t.Errorf("temp_dir: %v", err)
	}
	// A cancelled context is an error, as for the real service.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := exec.LocalExec(cctx, services.ExecRequest{Lines: []string{"true"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestMockRemoteServices(t *testing.T) {
	ctx := context.Background()
	rx := build(t, `{"class": "mlos_bench.tests.services.remote.mock.mock_remote_exec_service.MockRemoteExecService", "config": {"vmName": "test-vm"}}`, nil).(services.RemoteExec)
	res, err := rx.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"exit 1"}})
	if err != nil || res.ExitCode != 0 || res.Stdout != "" {
		t.Errorf("RemoteExec = %+v, %v", res, err)
	}

	vm := build(t, `{"class": "mlos_bench.tests.services.remote.mock.mock_vm_service.MockVMService", "config": {"vmName": "test-vm"}}`, nil)
	params := services.Params{"vmName": "test-vm"}
	got, err := vm.(services.HostProvisioning).ProvisionHost(ctx, params)
	if err != nil || len(got) != 0 {
		t.Errorf("ProvisionHost = %v, %v", got, err)
	}
	for name, op := range map[string]error{
		"DeprovisionHost": vm.(services.HostProvisioning).DeprovisionHost(ctx, params),
		"DeallocateHost":  vm.(services.HostProvisioning).DeallocateHost(ctx, params),
		"StartHost":       vm.(services.HostOps).StartHost(ctx, params),
		"StopHost":        vm.(services.HostOps).StopHost(ctx, params, true),
		"RestartHost":     vm.(services.HostOps).RestartHost(ctx, params, false),
		"Shutdown":        vm.(services.OSOps).Shutdown(ctx, params, false),
		"Reboot":          vm.(services.OSOps).Reboot(ctx, params, true),
	} {
		if op != nil {
			t.Errorf("%s: %v", name, op)
		}
	}

	net := build(t, `{"class": "mlos_bench.tests.services.remote.mock.mock_network_service.MockNetworkService"}`, nil).(services.NetworkProvisioning)
	if p, err := net.ProvisionNetwork(ctx, params); err != nil || len(p) != 0 {
		t.Errorf("ProvisionNetwork = %v, %v", p, err)
	}
	if err := net.DeprovisionNetwork(ctx, params, false); err != nil {
		t.Error(err)
	}

	auth := build(t, `{"class": "mlos_bench.tests.services.remote.mock.mock_auth_service.MockAuthService"}`, nil).(services.Auth)
	if tok, err := auth.AccessToken(ctx); err != nil || tok != "TOKEN" {
		t.Errorf("AccessToken = %q, %v", tok, err)
	}

	svc := build(t, `{"class": "mlos_bench.tests.services.remote.mock.mock_fileshare_service.MockFileShareService", "config": {"fileShareName": "test-share"}}`, nil)
	share := svc.(services.FileShare)
	if err := share.Upload(ctx, params, "/nonexistent/local.txt", "remote/a.txt", false); err != nil {
		t.Error(err)
	}
	if err := share.Download(ctx, params, "remote/out", "/tmp/out", true); err != nil {
		t.Error(err)
	}
	fsvc := svc.(*FileShareService)
	if diff := cmp.Diff([]Transfer{{From: "/nonexistent/local.txt", To: "remote/a.txt"}}, fsvc.Uploads()); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff([]Transfer{{From: "remote/out", To: "/tmp/out", Recursive: true}}, fsvc.Downloads()); diff != "" {
		t.Error(diff)
	}
}
