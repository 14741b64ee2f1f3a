package azure

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/services"
)

// Class names of AzureNetworkService (mlos_bench's).
const (
	NetworkClassShort = "mlos_bench.services.remote.azure.AzureNetworkService"
	NetworkClassFull  = "mlos_bench.services.remote.azure.azure_network_services.AzureNetworkService"
)

func init() {
	services.Register(newNetworkFromSpec, NetworkClassShort, NetworkClassFull)
}

// NetworkConfig is the config of AzureNetworkService: mlos_bench's keys
// and bench_azure_fixes.
type NetworkConfig struct {
	deploymentConfig
	// Fixes (bench only) deletes the network with ARM's DELETE instead of
	// mlos_bench's request, which ARM does not serve.
	Fixes bool `json:"bench_azure_fixes"`
}

// NetworkService provisions a virtual network from an ARM template and
// deprovisions it, as mlos_bench's AzureNetworkService. The network is named by
// the vnetName parameter (from the environment, else the deployment
// parameters); the deployment by deploymentName, by default
// "<vnetName>-deployment".
type NetworkService struct {
	*deployer
	fixes bool // bench_azure_fixes: delete with ARM's DELETE
}

var _ services.NetworkProvisioning = (*NetworkService)(nil)

func newNetworkFromSpec(_ context.Context, spec services.Spec) (any, error) {
	var c NetworkConfig
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	d, err := newDeployer(spec, c.deploymentConfig, "AzureNetworkService")
	if err != nil {
		return nil, fromConfigError(spec, err)
	}
	if d.template == nil {
		return nil, spec.Ref.Child("config").Child("deploymentTemplatePath").Errorf("AzureNetworkService needs an ARM template (deploymentTemplatePath)")
	}
	return &NetworkService{deployer: d, fixes: c.Fixes}, nil
}

func (s *NetworkService) vnetName(params services.Params) (string, error) {
	if n := s.paramString(params, "vnetName"); n != "" {
		return n, nil
	}
	return "", fmt.Errorf("AzureNetworkService needs the vnetName parameter (in the environment's parameters or the deployment parameters)")
}

// ProvisionNetwork deploys the template (Incremental mode, so re-running
// it is safe) and waits until it succeeded. It returns deploymentName,
// vnetName and the template's outputs.
func (s *NetworkService) ProvisionNetwork(ctx context.Context, params services.Params) (services.Params, error) {
	vnet, err := s.vnetName(params)
	name := vnet + "-deployment"
	if v, ok := params["deploymentName"]; ok && configs.PyStr(v) != "" {
		name = configs.PyStr(v)
	} else if err != nil {
		return nil, err
	}
	res, err := s.deploy(ctx, params, name)
	if err != nil {
		return nil, err
	}
	out := services.Params{"deploymentName": res.Name}
	if vnet != "" {
		out["vnetName"] = vnet
	}
	for k, v := range res.Outputs {
		out[k] = v
	}
	return out, nil
}

// DeprovisionNetwork sends mlos_bench's deprovisioning request, a POST to
// .../providers/Microsoft.Network/virtualNetwork/<vnetName>/delete, and
// follows the operation if Azure answers 202. ARM serves no such path (the
// resource type is virtualNetworks, and a virtual network is deleted with
// DELETE), so on Azure this fails, as it does for mlos_bench. With
// bench_azure_fixes it deletes the network with ARM's DELETE and waits
// until it is gone (a missing network is not an error). With ignoreErrors
// (NetworkEnv's teardown) a failure is logged and nil returned, as
// mlos_bench does.
func (s *NetworkService) DeprovisionNetwork(ctx context.Context, params services.Params, ignoreErrors bool) error {
	var err error
	if s.fixes {
		err = s.deleteVNet(ctx, params)
	} else {
		err = s.postDeprovision(ctx, params)
	}
	if err != nil && ignoreErrors {
		slog.Warn("azure: ignoring an error deprovisioning the virtual network", "error", err)
		return nil
	}
	return err
}

// postDeprovision is mlos_bench's request.
func (s *NetworkService) postDeprovision(ctx context.Context, params services.Params) error {
	vnet, err := s.vnetName(params)
	if err != nil {
		return err
	}
	what := "virtual network " + vnet + ": deprovision (mlos_bench's request; bench_azure_fixes deletes the network with ARM's DELETE)"
	slog.Info("azure: deprovisioning a virtual network as mlos_bench does", "vnet", vnet)
	p := s.rgPath("providers", "Microsoft.Network", "virtualNetwork", vnet, "delete") + "?api-version=" + apiNetwork
	r, err := s.send(ctx, http.MethodPost, p, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.waitAsync(ctx, r, what, time.Now().Add(s.pollTimeout))
}

func (s *NetworkService) deleteVNet(ctx context.Context, params services.Params) error {
	vnet, err := s.vnetName(params)
	if err != nil {
		return err
	}
	what := "virtual network " + vnet + ": delete"
	slog.Info("azure: deleting a virtual network", "vnet", vnet)
	p := s.rgPath("providers", "Microsoft.Network", "virtualNetworks", vnet) + "?api-version=" + apiNetwork
	r, err := s.send(ctx, http.MethodDelete, p, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.waitAsync(ctx, r, what, time.Now().Add(s.pollTimeout))
}
