package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/environments/local"
	svclocal "github.com/benchtune/bench/services/local"
)

const fileShareClass = "mlos_bench.environments.local.local_fileshare_env.LocalFileShareEnv"

// shareFixture returns a fixture whose stack has a LocalDirFileShareService
// over a fresh folder, built from its config.
func shareFixture(t *testing.T, files map[string]string) (*envtest.Fixture, string) {
	t.Helper()
	f := envtest.New(t, files)
	root := t.TempDir()
	f.Services = f.LoadServices(f.Services, fmt.Sprintf(`{"class": "bench.services.LocalDirFileShareService", "config": {"root": %q}}`, root))
	return f, root
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFileShareTemplating(t *testing.T) {
	f, root := shareFixture(t, nil)
	envtest.WriteFiles(t, root, map[string]string{"EXP_ID/222/halt/data.csv": "metric,value\nscore,0.75\n"})
	env := f.Build(envJSON(t, fileShareClass, "TestLocalFileShareEnv", map[string]any{
		"const_args":       map[string]any{"experiment_id": "EXP_ID", "trial_id": 222},
		"tunable_params":   []string{"boot"},
		"shell_env_params": []string{"trial_id", "idle"},
		"setup": []string{
			"echo \"grub for $trial_id\" > grub.cfg",
			"echo \"data,$idle\" > data_$idle.csv",
		},
		"upload": []map[string]string{
			{"from": "grub.cfg", "to": "$experiment_id/$trial_id/input/grub.cfg"},
			{"from": "data_$idle.csv", "to": "$experiment_id/$trial_id/input/data_$idle.csv"},
		},
		"run": []string{"echo No-op run"},
		"download": []map[string]string{
			{"from": "$experiment_id/$trial_id/$idle/data.csv", "to": "output/data_$idle.csv"},
			{"from": "$experiment_id/$trial_id/$idle", "to": "$PWD/copy/"},
		},
		"read_results_file": "output/data_halt.csv",
	}), nil)
	rec := &environments.Recorder{}
	ctx := environments.WithRecorder(context.Background(), rec)
	envtest.Open(t, env)
	if err := env.Setup(ctx, f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	res := env.Run(ctx)
	if res.Status != environments.SUCCEEDED {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	if diff := cmp.Diff(map[string]any{"score": 0.75}, envtest.WithoutMeasurements(res.Metrics)); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(root, "EXP_ID/222/input/grub.cfg")); got != "grub for 222\n" {
		t.Errorf("uploaded grub.cfg = %q", got)
	}
	if got := readFile(t, filepath.Join(root, "EXP_ID/222/input/data_halt.csv")); got != "data,halt\n" {
		t.Errorf("uploaded data_halt.csv = %q", got)
	}
	tmp := env.(*local.Env).TempDir()
	if got := readFile(t, filepath.Join(tmp, "copy", "data.csv")); !strings.Contains(got, "score,0.75") {
		t.Errorf("folder download to $PWD/copy/ = %q", got)
	}
	if st := env.Status(ctx); st.Status != environments.READY || st.Err != nil {
		t.Errorf("status %s, err %v", st.Status, st.Err)
	}
	var transfers []string
	for _, o := range rec.Outputs() {
		if o.Phase == "upload" || o.Phase == "download" {
			transfers = append(transfers, o.Phase+" "+strings.ReplaceAll(o.Command, tmp, "$PWD"))
		}
	}
	want := []string{
		"upload upload $PWD/grub.cfg -> EXP_ID/222/input/grub.cfg",
		"upload upload $PWD/data_halt.csv -> EXP_ID/222/input/data_halt.csv",
		// Before run, then again before status.
		"download download EXP_ID/222/halt/data.csv -> $PWD/output/data_halt.csv",
		"download download EXP_ID/222/halt -> $PWD/copy/",
		"download download EXP_ID/222/halt/data.csv -> $PWD/output/data_halt.csv",
		"download download EXP_ID/222/halt -> $PWD/copy/",
	}
	if diff := cmp.Diff(want, transfers); diff != "" {
		t.Errorf("recorded transfers (-want +got):\n%s", diff)
	}
}

func TestFileShareMissingDownload(t *testing.T) {
	f, _ := shareFixture(t, nil)
	env := f.Build(envJSON(t, fileShareClass, "FS", map[string]any{
		"run":      []string{"true"},
		"download": []map[string]string{{"from": "results/$trial_id.csv", "to": "out.csv"}},
	}), environments.Params{"trial_id": 9})
	res, st := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.FAILED || !strings.Contains(res.Reason, "download results/9.csv") {
		t.Errorf("run: %s %q; want FAILED naming the missing file", res.Status, res.Reason)
	}
	if st.Status != environments.READY || st.Err != nil {
		t.Errorf("status: %s %v; a missing file is skipped before status", st.Status, st.Err)
	}
}

func TestFileShareUploadFromSearchPath(t *testing.T) {
	f, root := shareFixture(t, map[string]string{"scripts/remote/bench.sh": "#!/bin/sh\necho hi\n"})
	env := f.Build(envJSON(t, fileShareClass, "FS", map[string]any{
		"upload": []map[string]string{{"from": "scripts/remote/", "to": "exp/scripts"}},
	}), nil)
	envtest.Trial(t, env, f.Tunables, nil)
	if got := readFile(t, filepath.Join(root, "exp/scripts/bench.sh")); !strings.Contains(got, "echo hi") {
		t.Errorf("uploaded script = %q", got)
	}
}

func TestFileShareEscapes(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("s3cr3t"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     map[string]any
		inSetup bool
		wantErr error
	}{
		{
			name:    "upload from parent",
			cfg:     map[string]any{"upload": []map[string]string{{"from": "../secret.txt", "to": "x"}}},
			inSetup: true, wantErr: local.ErrEscape,
		},
		{
			name:    "upload from an absolute path outside",
			cfg:     map[string]any{"upload": []map[string]string{{"from": secret, "to": "x"}}},
			inSetup: true, wantErr: local.ErrEscape,
		},
		{
			name: "upload through a symlink",
			cfg: map[string]any{
				"setup":  []string{"ln -s " + outside + " link"},
				"upload": []map[string]string{{"from": "link/secret.txt", "to": "x"}},
			},
			inSetup: true, wantErr: local.ErrEscape,
		},
		{
			name:    "upload with a templated parent",
			cfg:     map[string]any{"const_args": map[string]any{"sub": ".."}, "upload": []map[string]string{{"from": "$sub/secret.txt", "to": "x"}}},
			inSetup: true, wantErr: local.ErrEscape,
		},
		{
			name:    "upload to outside the share",
			cfg:     map[string]any{"setup": []string{"touch f"}, "upload": []map[string]string{{"from": "f", "to": "../../etc/f"}}},
			inSetup: true, wantErr: svclocal.ErrOutsideRoot,
		},
		{
			name:    "download to parent",
			cfg:     map[string]any{"download": []map[string]string{{"from": "data.csv", "to": "$PWD/../stolen.csv"}}},
			wantErr: local.ErrEscape,
		},
		{
			name:    "download to an absolute path outside",
			cfg:     map[string]any{"download": []map[string]string{{"from": "data.csv", "to": filepath.Join(outside, "overwritten")}}},
			wantErr: local.ErrEscape,
		},
		{
			name: "download through a symlink",
			cfg: map[string]any{
				"setup":    []string{"ln -s " + outside + " link"},
				"download": []map[string]string{{"from": "data.csv", "to": "link/overwritten"}},
			},
			wantErr: local.ErrEscape,
		},
		{
			name:    "download from outside the share",
			cfg:     map[string]any{"download": []map[string]string{{"from": "../" + filepath.Base(outside) + "/secret.txt", "to": "got"}}},
			wantErr: svclocal.ErrOutsideRoot,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, root := shareFixture(t, nil)
			envtest.WriteFiles(t, root, map[string]string{"data.csv": "metric,value\nx,1\n"})
			env := f.Build(envJSON(t, fileShareClass, "FS", tc.cfg), nil)
			envtest.Open(t, env)
			ctx := context.Background()
			err := env.Setup(ctx, f.Tunables, nil)
			if tc.inSetup {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("setup error = %v, want %v", err, tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				res := env.Run(ctx)
				if res.Status != environments.FAILED {
					t.Fatalf("run = %s, want FAILED", res.Status)
				}
				st := env.Status(ctx)
				if !errors.Is(st.Err, tc.wantErr) {
					t.Fatalf("status error = %v, want %v", st.Err, tc.wantErr)
				}
			}
			if _, err := os.Stat(filepath.Join(outside, "overwritten")); err == nil {
				t.Errorf("a file was written outside the working directory")
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(outside), "stolen.csv")); err == nil {
				t.Errorf("a file was written outside the working directory")
			}
			if b, err := os.ReadFile(filepath.Join(root, "x")); err == nil {
				t.Errorf("a file from outside was uploaded: %q", b)
			}
		})
	}
}

func TestFileShareNeedsService(t *testing.T) {
	f := envtest.New(t, nil)
	env := f.Build(envJSON(t, fileShareClass, "FS", map[string]any{
		"upload": []map[string]string{{"from": "a", "to": "b"}},
	}), nil)
	envtest.Open(t, env)
	err := env.Setup(context.Background(), f.Tunables, nil)
	want := `environment "FS" (class ` + fileShareClass + `) needs a FileShare service (e.g. LocalDirFileShareService or SshFileShareService); add it to include_services`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
}

// A folder download into the working directory where a setup script
// planted a symbolic link to the outside: the entry under the link is
// refused (the trial fails), and nothing is written outside.
func TestFileShareDownloadThroughPlantedLink(t *testing.T) {
	f, root := shareFixture(t, nil)
	envtest.WriteFiles(t, root, map[string]string{"results/sub/x.csv": "metric,value\nscore,1\n"})
	outside := t.TempDir()
	env := f.Build(envJSON(t, fileShareClass, "FS", map[string]any{
		"const_args":       map[string]any{"OUTSIDE": outside},
		"shell_env_params": []string{"OUTSIDE"},
		"setup":            []string{"mkdir copy && ln -s \"$OUTSIDE\" copy/sub"},
		"run":              []string{"true"},
		"download":         []map[string]string{{"from": "results", "to": "copy"}},
	}), nil)
	res, _ := envtest.Trial(t, env, f.Tunables, nil)
	if res.Status != environments.FAILED || !strings.Contains(res.Reason, "leaves its root folder") {
		t.Errorf("run: %s %q; want FAILED saying the path leaves its root folder", res.Status, res.Reason)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the download wrote outside the working directory: %v", entries)
	}
}
