package devices

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ParseGPUs reads a list of GPUs as given to --gpus: comma-separated
// indices ("0,1,3", as nvidia-smi numbers them) or UUIDs ("GPU-…", or
// "MIG-…" for MIG instances), with spaces around items ignored. Indices
// are normalized ("01" is "1"). Empty items and duplicates are errors. An
// empty or blank s means no GPUs (nil). "all" is an error: the caller
// detects GPUs with DetectGPUs.
func ParseGPUs(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if strings.EqualFold(strings.TrimSpace(s), "all") {
		return nil, errors.New(`GPU list: "all" is not a GPU id (detect the GPUs with nvidia-smi instead)`)
	}
	items := strings.Split(s, ",")
	out := make([]string, 0, len(items))
	for i, item := range items {
		id, err := gpuID(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("GPU list %q, item %d: %w", s, i+1, err)
		}
		out = append(out, id)
	}
	if err := checkGPUs(out); err != nil {
		return nil, fmt.Errorf("GPU list %q: %w", s, err)
	}
	return out, nil
}

// gpuID checks and normalizes one GPU id.
func gpuID(s string) (string, error) {
	switch {
	case s == "":
		return "", errors.New("empty (give GPU indices or UUIDs separated by commas, e.g. 0,1,3)")
	case isDigits(s):
		n, err := strconv.Atoi(s)
		if err != nil {
			return "", fmt.Errorf("GPU index %q: %w", s, err)
		}
		return strconv.Itoa(n), nil
	case strings.HasPrefix(s, "GPU-") || strings.HasPrefix(s, "MIG-"):
		if len(s) == 4 || strings.ContainsAny(s, " \t\n,=") {
			return "", fmt.Errorf("%q is not a GPU UUID", s)
		}
		return s, nil
	default:
		return "", fmt.Errorf("%q is neither a GPU index (0, 1, …) nor a GPU UUID (GPU-…, as nvidia-smi -L lists them)", s)
	}
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// checkGPUs rejects empty ids, ids that cannot go in CUDA_VISIBLE_DEVICES
// and duplicates.
func checkGPUs(ids []string) error {
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		if id == "" || strings.ContainsAny(id, " \t\n,=") {
			return fmt.Errorf("GPU id %q (item %d) cannot be used: it is empty or holds a space, a comma or '='", id, i+1)
		}
		if j, dup := seen[id]; dup {
			return fmt.Errorf("GPU %s is listed twice (items %d and %d)", id, j+1, i+1)
		}
		seen[id] = i
	}
	return nil
}

// GPU is a GPU that nvidia-smi lists.
type GPU struct {
	Index     int    // nvidia-smi's index (PCI bus order)
	UUID      string // e.g. GPU-8e6a2f1c-…
	Name      string // e.g. NVIDIA H100 80GB HBM3
	MemoryMiB int    // total memory; 0 when nvidia-smi does not say
}

// IDs returns the GPUs' indices as ids for Config.GPUs.
func IDs(gpus []GPU) []string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		out[i] = strconv.Itoa(g.Index)
	}
	return out
}

// DetectTimeout bounds DetectGPUs' nvidia-smi run.
const DetectTimeout = 30 * time.Second

// nvidiaSMIArgs are the arguments DetectGPUs runs nvidia-smi with.
var nvidiaSMIArgs = []string{"--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"}

// DetectGPUs lists this machine's GPUs with nvidia-smi. It returns nil,
// nil when nvidia-smi is not on PATH, and an error when it fails (e.g. no
// driver, or no GPU: nvidia-smi's own message is in the error), does not
// answer within DetectTimeout, or prints something unexpected.
func DetectGPUs(ctx context.Context) ([]GPU, error) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, DetectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, nvidiaSMIArgs...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	what := path + " " + strings.Join(nvidiaSMIArgs, " ")
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("detecting GPUs: %s did not answer in time: %w", what, ctx.Err())
		}
		return nil, fmt.Errorf("detecting GPUs: %w", ctx.Err())
	}
	if runErr != nil {
		msg := strings.TrimSpace(stderr.String() + "\n" + stdout.String())
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		return nil, fmt.Errorf("detecting GPUs: %s failed (%v): %s", what, runErr, msg)
	}
	gpus, err := parseGPUList(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("detecting GPUs: unexpected output of %s: %w", what, err)
	}
	return gpus, nil
}

// parseGPUList reads nvidia-smi's CSV: index, uuid, name, memory.total.
func parseGPUList(data []byte) ([]GPU, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = 4
	var gpus []GPU
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for i := range rec {
			rec[i] = strings.TrimSpace(rec[i])
		}
		line, _ := r.FieldPos(0)
		idx, err := strconv.Atoi(rec[0])
		if err != nil || idx < 0 {
			return nil, fmt.Errorf("line %d: GPU index %q is not a number", line, rec[0])
		}
		if rec[1] == "" {
			return nil, fmt.Errorf("line %d: GPU %d has no UUID", line, idx)
		}
		mem, err := strconv.Atoi(rec[3])
		if err != nil {
			mem = 0 // "[N/A]"
		}
		gpus = append(gpus, GPU{Index: idx, UUID: rec[1], Name: rec[2], MemoryMiB: mem})
	}
	return gpus, nil
}
