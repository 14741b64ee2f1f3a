package devices

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseGPUs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "   ", want: nil},
		{in: "0", want: []string{"0"}},
		{in: "0,1,3", want: []string{"0", "1", "3"}},
		{in: " 0 , 1,3 ", want: []string{"0", "1", "3"}},
		{in: "01,2", want: []string{"1", "2"}},
		{in: "GPU-8e6a2f1c-3b1d-5c9e-8f11-2a3b4c5d6e7f,2", want: []string{"GPU-8e6a2f1c-3b1d-5c9e-8f11-2a3b4c5d6e7f", "2"}},
		{in: "MIG-5d6e7f8a-1b2c-5d3e-9f40-1a2b3c4d5e6f", want: []string{"MIG-5d6e7f8a-1b2c-5d3e-9f40-1a2b3c4d5e6f"}},
		{in: "0,,1", wantErr: "item 2: empty"},
		{in: "0,1,", wantErr: "item 3: empty"},
		{in: ",", wantErr: "item 1: empty"},
		{in: "0,1,0", wantErr: "GPU 0 is listed twice (items 1 and 3)"},
		{in: "1,01", wantErr: "GPU 1 is listed twice"},
		{in: "GPU-a,GPU-a", wantErr: "GPU GPU-a is listed twice"},
		{in: "all", wantErr: `"all" is not a GPU id`},
		{in: "0 1", wantErr: `"0 1" is neither a GPU index`},
		{in: "cuda:0", wantErr: `"cuda:0" is neither a GPU index`},
		{in: "-1", wantErr: `"-1" is neither`},
		{in: "GPU-", wantErr: `"GPU-" is not a GPU UUID`},
		{in: "GPU-a=b", wantErr: `"GPU-a=b" is not a GPU UUID`},
		{in: "99999999999999999999999", wantErr: "GPU index"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseGPUs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseGPUs(%q) = %v, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// realOutput is what nvidia-smi prints for the query DetectGPUs makes
// (format: csv,noheader,nounits) on a machine with four GPUs.
const realOutput = `0, GPU-8e6a2f1c-3b1d-5c9e-8f11-2a3b4c5d6e7f, NVIDIA H100 80GB HBM3, 81559
1, GPU-1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9, NVIDIA H100 80GB HBM3, 81559
2, GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d, NVIDIA A100-SXM4-40GB, 40960
3, GPU-9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0, Tesla V100-PCIE-16GB, [N/A]
`

// fakeNvidiaSMI puts an nvidia-smi script first on PATH (and nothing
// else: the tests' PATH holds only its directory and /bin:/usr/bin for
// the script's own commands).
func fakeNvidiaSMI(t *testing.T, body string) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		`if [ "$*" != "` + strings.Join(nvidiaSMIArgs, " ") + `" ]; then echo "unexpected arguments: $*" >&2; exit 2; fi` + "\n" +
		body + "\n"
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
}

func TestDetectGPUs(t *testing.T) {
	fakeNvidiaSMI(t, "cat <<'END'\n"+realOutput+"END")
	gpus, err := DetectGPUs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, UUID: "GPU-8e6a2f1c-3b1d-5c9e-8f11-2a3b4c5d6e7f", Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559},
		{Index: 1, UUID: "GPU-1f2e3d4c-5b6a-4978-8695-a4b3c2d1e0f9", Name: "NVIDIA H100 80GB HBM3", MemoryMiB: 81559},
		{Index: 2, UUID: "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d", Name: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960},
		{Index: 3, UUID: "GPU-9f8e7d6c-5b4a-3928-1706-f5e4d3c2b1a0", Name: "Tesla V100-PCIE-16GB", MemoryMiB: 0},
	}
	if diff := cmp.Diff(want, gpus); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"0", "1", "2", "3"}, IDs(gpus)); diff != "" {
		t.Errorf("IDs (-want +got):\n%s", diff)
	}
}

func TestDetectGPUsAbsent(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	gpus, err := DetectGPUs(context.Background())
	if gpus != nil || err != nil {
		t.Errorf("without nvidia-smi: %v, %v; want nil, nil", gpus, err)
	}
}

func TestDetectGPUsErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"no driver",
			"echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\"; exit 9",
			"couldn't communicate with the NVIDIA driver"},
		{"no devices", "echo 'No devices were found'; exit 6", "No devices were found"},
		{"garbage", "echo 'hello world'", "unexpected output"},
		{"bad index", "echo 'x, GPU-a, name, 1'", `GPU index "x" is not a number`},
		{"no uuid", "echo '0, , name, 1'", "GPU 0 has no UUID"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fakeNvidiaSMI(t, tc.body)
			gpus, err := DetectGPUs(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "detecting GPUs") {
				t.Fatalf("DetectGPUs = %v, %v; want an error with %q", gpus, err, tc.want)
			}
		})
	}
}

func TestDetectGPUsTimeout(t *testing.T) {
	// A hung driver: nvidia-smi never answers (and a child keeps its
	// output open).
	fakeNvidiaSMI(t, "sleep 30 & sleep 30")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := DetectGPUs(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not answer in time") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("DetectGPUs took %v after its deadline", d)
	}
}
