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

// NetworkService provisions a virtual network from an ARM template and
// deletes it, as mlos_bench's AzureNetworkService. The network is named by
// the vnetName parameter (from the environment, else the deployment
// parameters); the deployment by deploymentName, by default
// "<vnetName>-deployment".
type NetworkService struct {
	*deployer
}

var _ services.NetworkProvisioning = (*NetworkService)(nil)

func newNetworkFromSpec(_ context.Context, spec services.Spec) (any, error) {
	var c deploymentConfig
	if err := decodeConfig(spec, &c); err != nil {
		return nil, err
	}
	d, err := newDeployer(spec, c, "AzureNetworkService")
	if err != nil {
		return nil, fromConfigError(spec, err)
	}
	if d.template == nil {
		return nil, spec.Ref.Child("config").Child("deploymentTemplatePath").Errorf("AzureNetworkService needs an ARM template (deploymentTemplatePath)")
	}
	return &NetworkService{deployer: d}, nil
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

// DeprovisionNetwork deletes the virtual network and waits until it is
// gone (a missing network is not an error). With ignoreErrors a failure
// is logged and nil returned, as mlos_bench does (the network may still
// be used by other resources).
func (s *NetworkService) DeprovisionNetwork(ctx context.Context, params services.Params, ignoreErrors bool) error {
	err := s.deleteVNet(ctx, params)
	if err != nil && ignoreErrors {
		slog.Warn("azure: ignoring an error deprovisioning the virtual network", "error", err)
		return nil
	}
	return err
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
