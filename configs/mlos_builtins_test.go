package configs

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/benchtune/bench/configs/source"
	"github.com/google/go-cmp/cmp"
)

func TestMlosBuiltinPathsTable(t *testing.T) {
	if !slices.IsSorted(MlosBuiltinPaths) {
		t.Error("MlosBuiltinPaths must be sorted (IsMlosBuiltin searches it)")
	}
	if len(slices.Compact(slices.Clone(MlosBuiltinPaths))) != len(MlosBuiltinPaths) {
		t.Error("MlosBuiltinPaths has duplicates")
	}
	// What bench ships at mlos_bench's paths: each of these must keep
	// mlos_bench's settings and tunables (see the launcher's built-in
	// tests); a change to this list is a change of what bench ships.
	var shipped []string
	for _, p := range MlosBuiltinPaths {
		if !IsUnshippedMlosBuiltin(p) {
			shipped = append(shipped, p)
		}
	}
	want := []string{
		"environments/apps/redis/redis-tunables.jsonc",
		"environments/mock/mock_env.jsonc",
		"environments/os/linux/boot/linux-boot-tunables.jsonc",
		"environments/os/linux/runtime/linux-runtime-tunables.jsonc",
		"environments/vm/azure/azure-vm-tunables.jsonc",
		"optimizers/manual_opt.jsonc",
		"optimizers/mlos_core_default_opt.jsonc",
		"optimizers/mlos_core_flaml.jsonc",
		"optimizers/mlos_core_smac.jsonc",
		"optimizers/mock_opt.jsonc",
		"schedulers/sync_scheduler.jsonc",
		"services/local/local_exec_service.jsonc",
		"services/remote/ssh/ssh_fileshare_service.jsonc",
		"services/remote/ssh/ssh_host_service.jsonc",
		"storage/in-memory.jsonc",
		"storage/mysql.jsonc",
		"storage/postgresql.jsonc",
		"storage/sqlite.jsonc",
		"tunables/dummy-tunables.jsonc",
	}
	if diff := cmp.Diff(want, shipped); diff != "" {
		t.Errorf("built-ins shipped at mlos_bench paths (-want +got):\n%s", diff)
	}
	unshipped := UnshippedMlosBuiltins()
	for _, p := range []string{
		"services/remote/azure/service-auth.jsonc",
		"environments/apps/redis/redis.jsonc",
		"environments/apps/fio/fio.jsonc",
		"environments/os/linux/boot/boot-ubuntu.jsonc",
		"environments/root/root-azure-redis.jsonc",
		"cli/azure-redis-opt.jsonc",
	} {
		if !slices.Contains(unshipped, p) {
			t.Errorf("%s should be listed as not shipped", p)
		}
	}
	// Every built-in bench ships is either at an mlos_bench path (above) or
	// at a path mlos_bench does not use (a bench-only built-in).
	err := fs.WalkDir(Builtin(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if IsUnshippedMlosBuiltin(p) {
			t.Errorf("%s is embedded but reported as not shipped", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestIsMlosBuiltin(t *testing.T) {
	for p, want := range map[string]bool{
		"services/remote/azure/service-auth.jsonc":   true,
		"./services/remote/azure/service-auth.jsonc": true,
		"services/remote/azure/nope.jsonc":           false,
		"/services/remote/azure/service-auth.jsonc":  false,
		"": false,
	} {
		if got := IsMlosBuiltin(p); got != want {
			t.Errorf("IsMlosBuiltin(%q) = %v", p, got)
		}
	}
	if UnshippedHint("storage/sqlite.jsonc") != "" || UnshippedHint("mine.jsonc") != "" {
		t.Error("a hint for a shipped or unknown path")
	}
}

func TestNotFoundNamesUnshippedMlosBuiltins(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := NewLoader(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.ReadDoc("services/remote/azure/service-auth.jsonc")
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Spec != "services/remote/azure/service-auth.jsonc" {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{
		"services/remote/azure/service-auth.jsonc: config file not found",
		"one of mlos_bench's built-in configs, which bench does not ship",
		"--config_path <mlos_bench checkout>/mlos_bench/mlos_bench/config",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	_, err = l.ReadDoc("environments/mine.jsonc")
	if err == nil || !strings.Contains(err.Error(), "config file not found") || strings.Contains(err.Error(), "mlos_bench") {
		t.Errorf("a path of the user's own: %v", err)
	}

	// Located at the entry of the list that names it.
	doc, err := source.Parse("env.jsonc", []byte("{\n  \"include_services\": [\n    \"a.jsonc\",\n    \"services/remote/azure/service-auth.jsonc\"\n  ]\n}"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.ReadDoc("services/remote/azure/service-auth.jsonc")
	specs := []string{"a.jsonc", "services/remote/azure/service-auth.jsonc"}
	got := LocateNotFound(err, doc.At("include_services"), specs)
	want := `env.jsonc:4:5: at /include_services/1: included file "services/remote/azure/service-auth.jsonc": config file not found`
	if !strings.HasPrefix(got.Error(), want) || !strings.Contains(got.Error(), "bench does not ship") {
		t.Errorf("got %v\nwant prefix %s", got, want)
	}
	if !errors.As(got, &nf) {
		t.Error("the located error must still wrap the NotFoundError")
	}
	// An error located already (a nested include) keeps its place.
	if again := LocateNotFound(got, doc.At("include_services"), []string{"services/remote/azure/service-auth.jsonc"}); again != got {
		t.Errorf("re-located: %v", again)
	}
	// Other errors pass through.
	other := errors.New("boom")
	if LocateNotFound(other, doc.At("include_services"), specs) != other {
		t.Error("other errors must be returned unchanged")
	}
}
