package remote

import (
	"context"
	"fmt"
	"maps"

	"github.com/benchtune/bench/environments"
	"github.com/benchtune/bench/environments/internal/script"
	"github.com/benchtune/bench/services"
	"github.com/benchtune/bench/tunables"
)

// HostEnv (and VMEnv, its alias) provisions a host on setup and
// deprovisions it on teardown. The parameters ProvisionHost returns (e.g.
// ssh_hostname, the instance ID) join the environment's parameters, are
// passed to DeprovisionHost, and are exported to the environments after it
// in a CompositeEnv, where they override the parameters of the same name
// (declare them in const_args or required_args of those environments, with
// a placeholder value given by the composite's const_args).
type HostEnv struct{ *opEnv }

var _ environments.Environment = HostEnv{}

func newHostEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	e, err := newOpEnv(spec)
	if err != nil {
		return nil, err
	}
	return HostEnv{e}, nil
}

// Setup provisions the host (or finds it) and waits until it runs.
func (e HostEnv) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	e.setReady(false)
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	prov, err := script.Need[services.HostProvisioning](e.Services(), e.Name(), e.Class(), "HostProvisioning", exampleHostProv)
	if err != nil {
		return err
	}
	got, err := prov.ProvisionHost(ctx, e.Parameters())
	if err != nil {
		return fmt.Errorf("%s: provision the host: %w", e.who(), err)
	}
	e.setExtra(got)
	e.setReady(true)
	return nil
}

// Teardown deprovisions the host.
func (e HostEnv) Teardown(ctx context.Context) error {
	e.setReady(false)
	prov, err := script.Need[services.HostProvisioning](e.Services(), e.Name(), e.Class(), "HostProvisioning", exampleHostProv)
	if err != nil {
		return err
	}
	if err := prov.DeprovisionHost(ctx, e.Parameters()); err != nil {
		return fmt.Errorf("%s: deprovision the host: %w", e.who(), err)
	}
	e.setExtra(nil)
	return nil
}

// OSEnv manages a host's operating system. Setup starts the host through
// HostOps when the stack has it; otherwise (a host bench cannot start,
// such as one reached over SSH) it checks that the host answers with a
// no-op script through RemoteExec. When the environment's tunables changed
// since its last setup (boot-time parameters), it then reboots the host
// through OSOps so that they take effect. Teardown shuts the host down
// through OSOps.
type OSEnv struct {
	*opEnv
	applied map[string]string // tunable values at the last setup
}

var _ environments.Environment = (*OSEnv)(nil)

func newOSEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	e, err := newOpEnv(spec)
	if err != nil {
		return nil, err
	}
	return &OSEnv{opEnv: e}, nil
}

// Setup makes sure the OS is up, rebooting it when its tunables changed.
func (e *OSEnv) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	e.setReady(false)
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	params := e.Parameters()
	if ops, ok := services.Find[services.HostOps](e.Services()); ok {
		if err := ops.StartHost(ctx, params); err != nil {
			return fmt.Errorf("%s: start the host: %w", e.who(), err)
		}
	} else if rx, ok := services.Find[services.RemoteExec](e.Services()); ok {
		res, err := rx.RemoteExec(ctx, services.RemoteExecRequest{Script: []string{"true"}, Params: params,
			CommandName: script.CommandName(e.Name(), "probe")})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("%s", script.ExitReason(res))
		}
		if err != nil {
			return fmt.Errorf("%s: the host does not answer: %w", e.who(), err)
		}
	} else {
		return &script.MissingServiceError{Env: e.Name(), Class: e.Class(), Capability: "HostOps", Example: exampleHostOps}
	}
	values := e.Tunables().StringValues()
	if e.applied != nil && len(values) > 0 && !maps.Equal(values, e.applied) {
		osOps, err := script.Need[services.OSOps](e.Services(), e.Name(), e.Class(), "OSOps", exampleOSOps)
		if err != nil {
			return err
		}
		if err := osOps.Reboot(ctx, params, false); err != nil {
			return fmt.Errorf("%s: reboot to apply the new tunable values: %w", e.who(), err)
		}
	}
	e.applied = values
	e.setReady(true)
	return nil
}

// Teardown shuts the host down (it is not deprovisioned).
func (e *OSEnv) Teardown(ctx context.Context) error {
	e.setReady(false)
	osOps, err := script.Need[services.OSOps](e.Services(), e.Name(), e.Class(), "OSOps", exampleOSOps)
	if err != nil {
		return err
	}
	if err := osOps.Shutdown(ctx, e.Parameters(), false); err != nil {
		return fmt.Errorf("%s: shut the host down: %w", e.who(), err)
	}
	e.applied = nil
	return nil
}

// NetworkEnv provisions a virtual network on setup; its parameters are
// kept and exported like HostEnv's. It is deprovisioned on teardown only
// when deprovision_on_teardown is true (errors are then ignored by the
// service, as in mlos_bench).
type NetworkEnv struct {
	*opEnv
	deprovision bool
}

var _ environments.Environment = (*NetworkEnv)(nil)

type rawNetwork struct {
	TunableParams         any   `json:"tunable_params"`
	RequiredArgs          any   `json:"required_args"`
	ConstArgs             any   `json:"const_args"`
	DeprovisionOnTeardown *bool `json:"deprovision_on_teardown"`
}

func newNetworkEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	e, err := newOpEnv(spec, "deprovision_on_teardown")
	if err != nil {
		return nil, err
	}
	var raw rawNetwork
	if err := script.DecodeKeys(spec.Config, spec.Ref.Child("config"), &raw,
		"tunable_params", "required_args", "const_args", "deprovision_on_teardown"); err != nil {
		return nil, err
	}
	n := &NetworkEnv{opEnv: e}
	if raw.DeprovisionOnTeardown != nil {
		n.deprovision = *raw.DeprovisionOnTeardown
	}
	return n, nil
}

// Setup provisions the network (or finds it).
func (e *NetworkEnv) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	e.setReady(false)
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	net, err := script.Need[services.NetworkProvisioning](e.Services(), e.Name(), e.Class(), "NetworkProvisioning", exampleNetwork)
	if err != nil {
		return err
	}
	got, err := net.ProvisionNetwork(ctx, e.Parameters())
	if err != nil {
		return fmt.Errorf("%s: provision the network: %w", e.who(), err)
	}
	e.setExtra(got)
	e.setReady(true)
	return nil
}

// Teardown deprovisions the network if deprovision_on_teardown is set.
func (e *NetworkEnv) Teardown(ctx context.Context) error {
	if !e.deprovision {
		return nil
	}
	e.setReady(false)
	net, err := script.Need[services.NetworkProvisioning](e.Services(), e.Name(), e.Class(), "NetworkProvisioning", exampleNetwork)
	if err != nil {
		return err
	}
	if err := net.DeprovisionNetwork(ctx, e.Parameters(), true); err != nil {
		return fmt.Errorf("%s: deprovision the network: %w", e.who(), err)
	}
	e.setExtra(nil)
	return nil
}

// SaaSEnv configures a managed service with the values of its tunables
// (RemoteConfig.Configure) and, when the service says the new
// configuration is pending a restart, restarts it and then starts it
// through HostOps, as mlos_bench's SaaSEnv does.
type SaaSEnv struct{ *opEnv }

var _ environments.Environment = SaaSEnv{}

func newSaaSEnv(_ context.Context, spec environments.Spec) (environments.Environment, error) {
	e, err := newOpEnv(spec)
	if err != nil {
		return nil, err
	}
	return SaaSEnv{e}, nil
}

// Setup applies the tunable values and restarts the service if needed.
func (e SaaSEnv) Setup(ctx context.Context, tun *tunables.Groups, globals environments.Params) error {
	e.setReady(false)
	if err := e.SetupParams(tun, globals); err != nil {
		return err
	}
	cfg, err := script.Need[services.RemoteConfig](e.Services(), e.Name(), e.Class(), "RemoteConfig", exampleConfig)
	if err != nil {
		return err
	}
	params := e.Parameters()
	if err := cfg.Configure(ctx, params, e.Tunables().Values()); err != nil {
		return fmt.Errorf("%s: configure: %w", e.who(), err)
	}
	pending, err := cfg.IsConfigPending(ctx, params)
	if err != nil {
		return fmt.Errorf("%s: check whether the configuration needs a restart: %w", e.who(), err)
	}
	if pending {
		ops, err := script.Need[services.HostOps](e.Services(), e.Name(), e.Class(), "HostOps", exampleHostOps)
		if err != nil {
			return err
		}
		if err := ops.RestartHost(ctx, params, false); err != nil {
			return fmt.Errorf("%s: restart to apply the configuration: %w", e.who(), err)
		}
		if err := ops.StartHost(ctx, params); err != nil {
			return fmt.Errorf("%s: start after the restart: %w", e.who(), err)
		}
	}
	e.setReady(true)
	return nil
}

// Teardown marks the environment as not set up.
func (e SaaSEnv) Teardown(context.Context) error {
	e.setReady(false)
	return nil
}
