package remote_test

import (
	"context"
	"strings"
	"testing"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/envtest"
	"github.com/benchtune/bench/services"
)

// TestRemoteEnvMistakes: a RemoteEnv's shell_env_params name that no
// parameter provides is an error when it is built, with a did-you-mean;
// a results pattern that matches none of the run's output leaves a note
// with its first lines.
func TestRemoteEnvMistakes(t *testing.T) {
	f := envtest.New(t, nil)
	rx := &fakeExec{j: &journal{}, answer: func(req services.RemoteExecRequest) (services.ExecResult, error) {
		if strings.HasSuffix(req.CommandName, "-run") {
			return services.ExecResult{Stdout: "latency: 1.5\n"}, nil
		}
		return services.ExecResult{}, nil
	}}
	bad := strings.Replace(remoteJSON, `"shell_env_params": ["kernel_sched_latency_ns"]`, `"shell_env_params": ["kernel_sched_latency_nss"]`, 1)
	_, err := f.Builder.LoadEnvironment(context.Background(), bad, f.Tunables, environments.Params{"vmName": "vm-7"}, nil, f.Services.Push(rx), nil)
	if err == nil || !strings.Contains(err.Error(), `/config/shell_env_params/0`) || !strings.Contains(err.Error(), `no parameter "kernel_sched_latency_nss" (did you mean "kernel_sched_latency_ns"?)`) {
		t.Fatalf("err = %v", err)
	}
	env := build(t, f, remoteJSON, environments.Params{"vmName": "vm-7"}, rx)
	envtest.Open(t, env)
	if err := env.Setup(context.Background(), f.Tunables, nil); err != nil {
		t.Fatal(err)
	}
	res := env.Run(context.Background())
	if res.Status != environments.SUCCEEDED || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], `matched none of the run's 1 output line(s); they are: "latency: 1.5"`) {
		t.Errorf("result %+v", res)
	}
}
