package azure

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/benchtune/bench/internal/armfake"
	"github.com/benchtune/bench/services"
)

func networkConfig(srv *armfake.Server) map[string]any {
	return map[string]any{
		"subscription":           srv.Subscription(),
		"resourceGroup":          srv.ResourceGroup(),
		"deploymentTemplatePath": "azure/arm-templates/virtual-network.jsonc",
		"deploymentTemplateParameters": map[string]any{
			"location":                 "PLACEHOLDER",
			"vnetName":                 "$resourceGroup-$location-vnet",
			"vnetAddressPrefix":        "10.0.0.0/16",
			"subnetName":               "default",
			"subnetPrefix":             "10.0.0.0/24",
			"networkSecurityGroupName": "$vnetName-default-nsg",
			"sourceAddressPrefixes":    []any{"192.168.42.0/24"},
			"destinationPortRanges":    []any{int64(22), int64(3389)},
		},
		"pollInterval": 0.02,
		"pollTimeout":  10,
	}
}

// TestNetworkProvisionAndDeprovision deploys the virtual network template
// with parameters templated from the globals, re-runs it, and deletes the
// network.
func TestNetworkProvisionAndDeprovision(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	globals := map[string]any{"resourceGroup": srv.ResourceGroup(), "location": "westus2"}
	cfg := networkConfig(srv)
	// The globals fill the placeholders before the templating, as the
	// builder merges globals into the config's keys.
	cfg["deploymentTemplateParameters"].(map[string]any)["location"] = "westus2"
	svc, err := newSvc(t, NetworkClassFull, cfg, globals, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	net := svc.(*NetworkService)
	got, err := net.ProvisionNetwork(ctx, services.Params{})
	if err != nil {
		t.Fatal(err)
	}
	want := "bench-rg-westus2-vnet"
	if got["vnetName"] != want || got["deploymentName"] != want+"-deployment" || got["subnetName"] != "default" {
		t.Errorf("ProvisionNetwork returned %v", got)
	}
	v, ok := srv.VNet(want)
	if !ok {
		t.Fatal("no virtual network")
	}
	if _, ok := srv.Resource("Microsoft.Network/networkSecurityGroups/" + want + "-default-nsg"); !ok {
		t.Error("no network security group")
	}
	subnets := v["properties"].(map[string]any)["subnets"].([]any)
	if p := subnets[0].(map[string]any)["properties"].(map[string]any)["addressPrefix"]; p != "10.0.0.0/24" {
		t.Errorf("subnet prefix %v", p)
	}
	// Re-run: updated in place.
	if _, err := net.ProvisionNetwork(ctx, services.Params{}); err != nil {
		t.Fatal(err)
	}
	if err := net.DeprovisionNetwork(ctx, services.Params{}, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.VNet(want); ok {
		t.Error("the network is still there")
	}
	if n := srv.CountCalls(http.MethodDelete, "/virtualNetworks/"+want); n != 1 {
		t.Errorf("%d DELETE calls", n)
	}
	// Deleting a network that is gone: 204, no error.
	if err := net.DeprovisionNetwork(ctx, services.Params{}, false); err != nil {
		t.Errorf("second delete: %v", err)
	}
	// A failing deletion: an error, or nothing with ignoreErrors (mlos_bench's
	// default for NetworkEnv teardown).
	if _, err := net.ProvisionNetwork(ctx, services.Params{"vnetName": "busy-vnet"}); err != nil {
		t.Fatal(err)
	}
	srv.FailOperations("busy-vnet")
	err = net.DeprovisionNetwork(ctx, services.Params{"vnetName": "busy-vnet"}, false)
	if err == nil || !strings.Contains(err.Error(), "virtual network busy-vnet: delete: the operation failed") {
		t.Errorf("error = %v", err)
	}
	if err := net.DeprovisionNetwork(ctx, services.Params{"vnetName": "busy-vnet"}, true); err != nil {
		t.Errorf("with ignoreErrors: %v", err)
	}
}

func TestNetworkConfigErrors(t *testing.T) {
	srv := StartFake(t, armfake.Options{})
	cfg := networkConfig(srv)
	delete(cfg, "deploymentTemplatePath")
	_, err := newSvc(t, NetworkClassShort, cfg, nil, armAuth(srv))
	if err == nil || !strings.Contains(err.Error(), "/config/deploymentTemplatePath: AzureNetworkService needs an ARM template") {
		t.Errorf("error = %v", err)
	}
	cfg = networkConfig(srv)
	delete(cfg["deploymentTemplateParameters"].(map[string]any), "vnetName")
	svc, err := newSvc(t, NetworkClassShort, cfg, nil, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.(*NetworkService).ProvisionNetwork(context.Background(), services.Params{}); err == nil || !strings.Contains(err.Error(), "needs the vnetName parameter") {
		t.Errorf("error = %v", err)
	}
}
