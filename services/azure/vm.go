package azure

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/services"
)

// Class names of AzureVMService (mlos_bench's).
const (
	VMClassShort = "mlos_bench.services.remote.azure.AzureVMService"
	VMClassFull  = "mlos_bench.services.remote.azure.azure_vm_services.AzureVMService"
)

func init() {
	services.Register(newVMFromSpec, VMClassShort, VMClassFull)
}

// VMConfig is the config of AzureVMService (mlos_bench's keys).
type VMConfig struct {
	deploymentConfig
	// CustomDataFile is read into the customData deployment parameter.
	CustomDataFile string `json:"customDataFile"`
	// ShellLines (bench only) is how Run Command gets a phase's lines:
	// "mlos_bench" (the default) joins them with "; " as mlos_bench does,
	// "verbatim" one per line, as written.
	ShellLines string `json:"bench_shell_lines"`
}

// Values of bench_shell_lines (the key and values LocalEnv has too).
const (
	ShellLinesMlosBench = "mlos_bench"
	ShellLinesVerbatim  = "verbatim"
)

// VMService manages Azure VMs through ARM's REST API, as mlos_bench's
// AzureVMService: it provisions them from an ARM template, starts, stops,
// deallocates and restarts them, and runs scripts on them with Run
// Command. The VM is named by the vmName parameter (from the environment,
// else the deployment parameters); the deployment by deploymentName, by
// default "<vmName>-deployment".
type VMService struct {
	*deployer
	verbatim bool // bench_shell_lines "verbatim": lines joined by newlines
}

var (
	_ services.HostProvisioning = (*VMService)(nil)
	_ services.HostOps          = (*VMService)(nil)
	_ services.OSOps            = (*VMService)(nil)
	_ services.RemoteExec       = (*VMService)(nil)
)

func newVMFromSpec(_ context.Context, spec services.Spec) (any, error) {
	var c VMConfig
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	d, err := newDeployer(spec, c.deploymentConfig, "AzureVMService")
	if err != nil {
		return nil, fromConfigError(spec, err)
	}
	if c.CustomDataFile != "" {
		if v, ok := d.params["customData"]; ok && v != nil && v != "" {
			return nil, spec.Ref.Child("config").Child("customDataFile").Errorf("give customDataFile or the customData deployment parameter, not both")
		}
		loader, err := configs.NewLoader(nil, spec.SearchPath...)
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(loader.Resolve(c.CustomDataFile))
		if err != nil {
			return nil, spec.Ref.Child("config").Child("customDataFile").Errorf("%v", err)
		}
		d.params["customData"] = string(data)
	}
	switch c.ShellLines {
	case "", ShellLinesMlosBench, ShellLinesVerbatim:
	default:
		return nil, spec.Ref.Child("config").Child("bench_shell_lines").Errorf("must be %q (the default: lines joined with \"; \", as mlos_bench does) or %q (one line after another, as written), not %q", ShellLinesMlosBench, ShellLinesVerbatim, c.ShellLines)
	}
	return &VMService{deployer: d, verbatim: c.ShellLines == ShellLinesVerbatim}, nil
}

func (s *VMService) vmName(params services.Params) (string, error) {
	if n := s.paramString(params, "vmName"); n != "" {
		return n, nil
	}
	return "", fmt.Errorf("AzureVMService needs the vmName parameter (in the environment's const_args, required_args or the globals)")
}

func (s *VMService) deploymentName(params services.Params) (string, error) {
	if n, ok := params["deploymentName"]; ok && configs.PyStr(n) != "" {
		return configs.PyStr(n), nil
	}
	vm, err := s.vmName(params)
	if err != nil {
		return "", fmt.Errorf("AzureVMService needs the deploymentName or vmName parameter")
	}
	return vm + "-deployment", nil
}

// ProvisionHost deploys the ARM template (Incremental mode: re-running it
// updates the existing resources) and waits until the deployment
// succeeded. It returns deploymentName, vmName and the template's outputs.
func (s *VMService) ProvisionHost(ctx context.Context, params services.Params) (services.Params, error) {
	name, err := s.deploymentName(params)
	if err != nil {
		return nil, err
	}
	res, err := s.deploy(ctx, params, name)
	if err != nil {
		return nil, err
	}
	out := services.Params{"deploymentName": res.Name}
	if vm, err := s.vmName(params); err == nil {
		out["vmName"] = vm
	}
	for k, v := range res.Outputs {
		out[k] = v
	}
	return out, nil
}

// DeprovisionHost deallocates the VM, as mlos_bench does (the VM, its
// disks and the other resources of the deployment are kept).
func (s *VMService) DeprovisionHost(ctx context.Context, params services.Params) error {
	return s.action(ctx, params, "deallocate", "", "deallocated")
}

// DeallocateHost stops the VM and releases its compute resources.
func (s *VMService) DeallocateHost(ctx context.Context, params services.Params) error {
	return s.action(ctx, params, "deallocate", "", "deallocated")
}

// StartHost starts the VM and waits until it runs.
func (s *VMService) StartHost(ctx context.Context, params services.Params) error {
	return s.action(ctx, params, "start", "", "running")
}

// StopHost powers the VM off (force: without a graceful guest shutdown)
// and waits until it is stopped. Compute stays allocated (and billed).
func (s *VMService) StopHost(ctx context.Context, params services.Params, force bool) error {
	q := ""
	if force {
		q = "&skipShutdown=true"
	}
	return s.action(ctx, params, "powerOff", q, "stopped")
}

// RestartHost restarts the VM and waits until it runs again.
func (s *VMService) RestartHost(ctx context.Context, params services.Params, _ bool) error {
	return s.action(ctx, params, "restart", "", "running")
}

// Shutdown is StopHost (mlos_bench's AzureVMService.shutdown).
func (s *VMService) Shutdown(ctx context.Context, params services.Params, force bool) error {
	return s.StopHost(ctx, params, force)
}

// Reboot is RestartHost.
func (s *VMService) Reboot(ctx context.Context, params services.Params, force bool) error {
	return s.RestartHost(ctx, params, force)
}

// action POSTs a VM action, waits for its operation, then for the VM's
// power state to become want, all within pollTimeout.
func (s *VMService) action(ctx context.Context, params services.Params, action, query, want string) error {
	vm, err := s.vmName(params)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.pollTimeout)
	what := fmt.Sprintf("VM %s: %s", vm, action)
	slog.Info("azure: VM operation", "vm", vm, "action", action)
	base := s.rgPath("providers", "Microsoft.Compute", "virtualMachines", vm)
	r, err := s.send(ctx, http.MethodPost, base+"/"+action+"?api-version="+apiCompute+query, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := s.waitAsync(ctx, r, what, deadline); err != nil {
		return err
	}
	return s.waitPower(ctx, vm, want, what, deadline)
}

// waitPower polls the VM's instance view until its power state is want.
func (s *VMService) waitPower(ctx context.Context, vm, want, what string, deadline time.Time) error {
	p := s.rgPath("providers", "Microsoft.Compute", "virtualMachines", vm) + "/instanceView?api-version=" + apiCompute
	last := "unknown"
	for {
		r, err := s.send(ctx, http.MethodGet, p, nil)
		if err != nil {
			return fmt.Errorf("%s: reading the power state: %w", what, err)
		}
		var iv struct {
			Statuses []struct {
				Code string `json:"code"`
			} `json:"statuses"`
		}
		if err := r.json(&iv); err != nil {
			return fmt.Errorf("%s: reading the power state: %w", what, err)
		}
		for _, st := range iv.Statuses {
			if ps, ok := strings.CutPrefix(st.Code, "PowerState/"); ok {
				last = ps
			}
		}
		if last == want {
			return nil
		}
		if time.Now().Add(s.pollInterval).After(deadline) {
			return fmt.Errorf("%s: %w: the VM is %s, not %s, after pollTimeout (%s)", what, services.ErrTimeout, last, want, s.pollTimeout)
		}
		if err := sleep(ctx, s.pollInterval); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

var commandNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// RemoteExec runs the script on the VM with Run Command (managed, async
// execution) and waits for its result. The lines are joined into one
// shell script with "; ", as mlos_bench does (so a line that is a comment
// swallows the lines after it), or with newlines under bench_shell_lines
// "verbatim"; req.Env reaches it as protectedParameters, which
// Run Command exports as environment variables (never spliced into the
// script text). The command is named by the commandName parameter, else
// req.CommandName; the location comes from the location parameter.
func (s *VMService) RemoteExec(ctx context.Context, req services.RemoteExecRequest) (services.ExecResult, error) {
	vm, err := s.vmName(req.Params)
	if err != nil {
		return services.ExecResult{}, err
	}
	loc := s.paramString(req.Params, "location")
	if loc == "" {
		return services.ExecResult{}, fmt.Errorf("AzureVMService needs the location parameter to run a command on VM %s", vm)
	}
	name := req.CommandName
	if v, ok := req.Params["commandName"]; ok && configs.PyStr(v) != "" {
		name = configs.PyStr(v)
	}
	name = strings.Trim(commandNameRE.ReplaceAllString(name, "-"), "-.")
	if name == "" {
		name = "bench-command"
	}
	if len(name) > 80 {
		name = name[:80]
	}
	timeout := s.pollTimeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	prot := make([]any, 0, len(keys))
	for _, k := range keys {
		prot = append(prot, map[string]any{"name": k, "value": req.Env[k]})
	}
	sep := "; "
	if s.verbatim {
		sep = "\n"
	}
	script := strings.Join(req.Script, sep)
	body := map[string]any{
		"location": loc,
		"properties": map[string]any{
			"source":              map[string]any{"script": script},
			"protectedParameters": prot,
			"timeoutInSeconds":    int(max(timeout/time.Second, 1)),
			"asyncExecution":      true,
		},
	}
	what := fmt.Sprintf("VM %s: run command %s", vm, name)
	p := s.rgPath("providers", "Microsoft.Compute", "virtualMachines", vm, "runCommands", name)
	slog.Info("azure: run command", "vm", vm, "command", name, "lines", len(req.Script))
	put, err := s.send(ctx, http.MethodPut, p+"?api-version="+apiRunCommand, body)
	if err != nil {
		return services.ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	delay := s.nextDelay(put.header)
	// Run Command's own timeout ends the script; poll a little longer.
	deadline := time.Now().Add(timeout + s.pollInterval + min(timeout/10, 30*time.Second))
	get := p + "?$expand=instanceView&api-version=" + apiRunCommand
	for {
		if err := sleep(ctx, delay); err != nil {
			return services.ExecResult{}, fmt.Errorf("%s: %w", what, err)
		}
		r, err := s.send(ctx, http.MethodGet, get, nil)
		if err != nil {
			return services.ExecResult{}, fmt.Errorf("%s: polling: %w", what, err)
		}
		var doc struct {
			Properties struct {
				InstanceView struct {
					ExecutionState   string `json:"executionState"`
					ExecutionMessage string `json:"executionMessage"`
					ExitCode         *int   `json:"exitCode"`
					Output           string `json:"output"`
					Error            string `json:"error"`
					StartTime        string `json:"startTime"`
					EndTime          string `json:"endTime"`
				} `json:"instanceView"`
			} `json:"properties"`
		}
		if err := r.json(&doc); err != nil {
			return services.ExecResult{}, fmt.Errorf("%s: polling: %w", what, err)
		}
		iv := doc.Properties.InstanceView
		switch iv.ExecutionState {
		case "Running", "Pending", "Unknown", "":
			if time.Now().After(deadline) {
				return services.ExecResult{}, fmt.Errorf("%s: %w: still %s after %s", what, services.ErrTimeout, strings.ToLower(cmpOr(iv.ExecutionState, "pending")), timeout)
			}
			delay = s.nextDelay(r.header)
			continue
		}
		code := 0
		if iv.ExitCode != nil {
			code = *iv.ExitCode
		}
		start, _ := time.Parse(time.RFC3339Nano, iv.StartTime)
		end, _ := time.Parse(time.RFC3339Nano, iv.EndTime)
		line := services.LineResult{Line: script, ExitCode: code, Stdout: iv.Output, Stderr: iv.Error, Start: start}
		if !start.IsZero() && end.After(start) {
			line.Duration = end.Sub(start)
		}
		res := services.ExecResult{ExitCode: code, Stdout: iv.Output, Stderr: iv.Error, Lines: []services.LineResult{line}}
		if req.Live != nil {
			_, _ = fmt.Fprint(req.Live, iv.Output)
		}
		switch iv.ExecutionState {
		case "Succeeded":
			return res, nil
		case "Failed":
			if res.ExitCode == 0 {
				res.ExitCode, res.Lines[0].ExitCode = 1, 1
			}
			return res, nil
		case "TimedOut":
			res.Lines[0].TimedOut = true
			return res, fmt.Errorf("%s: %w (Run Command's timeout of %s)", what, services.ErrTimeout, timeout)
		default:
			return res, fmt.Errorf("%s: execution state %s %s", what, iv.ExecutionState, iv.ExecutionMessage)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
