package azure

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/services"
)

// Class names of AzureSaaSConfigService (mlos_bench's).
const (
	SaaSClassShort = "mlos_bench.services.remote.azure.AzureSaaSConfigService"
	SaaSClassFull  = "mlos_bench.services.remote.azure.azure_saas.AzureSaaSConfigService"
)

func init() {
	services.Register(newSaaSFromSpec, SaaSClassShort, SaaSClassFull)
}

// SaaSConfig is the config of AzureSaaSConfigService (mlos_bench's keys).
type SaaSConfig struct {
	requestConfig
	Subscription  string `json:"subscription"`
	ResourceGroup string `json:"resourceGroup"`
	// VMName is the server's name (the vmName parameter overrides it).
	VMName string `json:"vmName"`
	// Provider is the resource provider, e.g. Microsoft.DBforMySQL.
	Provider            string `json:"provider"`
	SupportsBatchUpdate *bool  `json:"supportsBatchUpdate"`
	IsFlex              *bool  `json:"isFlex"`
	APIVersion          string `json:"apiVersion"`
}

// SaaSService sets the configuration parameters of an Azure database
// server (MySQL or PostgreSQL flexible server, MariaDB server) from the
// tunable values, as mlos_bench's AzureSaaSConfigService: one PUT per
// parameter, or one batch POST where the server supports it (MySQL
// flexible servers). It also restarts the server (HostOps), which
// SaaSEnv does when a changed parameter is pending a restart.
type SaaSService struct {
	arm      *armClient
	cfg      SaaSConfig
	batch    bool
	kind     string // flexibleServers or servers
	apiVer   string
	provider string
}

var (
	_ services.RemoteConfig = (*SaaSService)(nil)
	_ services.HostOps      = (*SaaSService)(nil)
)

func newSaaSFromSpec(_ context.Context, spec services.Spec) (any, error) {
	var c SaaSConfig
	if err := decodeConfig(spec, &c); err != nil {
		return nil, err
	}
	auth, ok := services.Find[services.Auth](spec.Parent)
	if !ok {
		return nil, services.NeedsService(spec.Ref.Child("config").Errorf("AzureSaaSConfigService needs an authentication service listed before it (e.g. services/remote/azure/service-auth.jsonc)"))
	}
	s, err := NewSaaSService(c, auth)
	if err != nil {
		return nil, fromConfigError(spec, err)
	}
	return s, nil
}

// NewSaaSService checks the config. mlos_bench's defaults per provider:
// MySQL batch update, flexible server, API 2022-01-01; PostgreSQL one by
// one, flexible, 2022-12-01; MariaDB one by one, single server,
// 2018-06-01. Another provider needs all three keys.
func NewSaaSService(c SaaSConfig, auth services.Auth) (*SaaSService, error) {
	for _, kv := range [][2]string{{"subscription", c.Subscription}, {"resourceGroup", c.ResourceGroup}, {"provider", c.Provider}} {
		if strings.TrimSpace(kv[1]) == "" {
			return nil, &configError{kv[0], "is required"}
		}
	}
	var batch, flex bool
	var api string
	switch c.Provider {
	case "Microsoft.DBforMySQL":
		batch, flex, api = true, true, "2022-01-01"
	case "Microsoft.DBforMariaDB":
		batch, flex, api = false, false, "2018-06-01"
	case "Microsoft.DBforPostgreSQL":
		batch, flex, api = false, true, "2022-12-01"
	default:
		if c.SupportsBatchUpdate == nil || c.IsFlex == nil || c.APIVersion == "" {
			return nil, &configError{"provider", fmt.Sprintf("%q is not a provider bench knows; give supportsBatchUpdate, isFlex and apiVersion too", c.Provider)}
		}
	}
	if c.SupportsBatchUpdate != nil {
		batch = *c.SupportsBatchUpdate
	}
	if c.IsFlex != nil {
		flex = *c.IsFlex
	}
	if c.APIVersion != "" {
		api = c.APIVersion
	}
	arm, err := newARMClient(c.requestConfig, auth, c.Subscription, c.ResourceGroup, "AzureSaaSConfigService")
	if err != nil {
		return nil, err
	}
	kind := "servers"
	if flex {
		kind = "flexibleServers"
	}
	return &SaaSService{arm: arm, cfg: c, batch: batch, kind: kind, apiVer: api, provider: c.Provider}, nil
}

func (s *SaaSService) serverPath(params services.Params) (string, string, error) {
	name := s.cfg.VMName
	if v, ok := params["vmName"]; ok && configs.PyStr(v) != "" {
		name = configs.PyStr(v)
	}
	if name == "" {
		return "", "", fmt.Errorf("AzureSaaSConfigService needs the vmName parameter (the server's name)")
	}
	return s.arm.rgPath("providers", s.provider, s.kind, name), name, nil
}

// Configure sets the parameters (values as Python's str() writes them, as
// mlos_bench sends them) and waits until Azure applied them.
func (s *SaaSService) Configure(ctx context.Context, params services.Params, settings map[string]any) error {
	base, server, err := s.serverPath(params)
	if err != nil {
		return err
	}
	if len(settings) == 0 {
		return nil
	}
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	if s.batch {
		deadline := time.Now().Add(s.arm.pollTimeout)
		vals := make([]any, 0, len(names))
		for _, k := range names {
			vals = append(vals, map[string]any{"name": k, "properties": map[string]any{"value": configs.PyStr(settings[k])}})
		}
		what := fmt.Sprintf("server %s: update %d configuration parameters", server, len(names))
		slog.Info("azure: updating a server's configuration", "server", server, "parameters", len(names))
		r, err := s.arm.send(ctx, http.MethodPost, base+"/updateConfigurations?api-version="+s.apiVer, map[string]any{"value": vals})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return s.arm.waitAsync(ctx, r, what, deadline)
	}
	for _, k := range names {
		what := fmt.Sprintf("server %s: set %s", server, k)
		slog.Debug("azure: setting a server configuration parameter", "server", server, "parameter", k)
		r, err := s.arm.send(ctx, http.MethodPut, base+"/configurations/"+url.PathEscape(k)+"?api-version="+s.apiVer,
			map[string]any{"properties": map[string]any{"value": configs.PyStr(settings[k]), "source": "user-override"}})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		// pollTimeout bounds each parameter's change.
		if err := s.arm.waitAsync(ctx, r, what, time.Now().Add(s.arm.pollTimeout)); err != nil {
			return err
		}
	}
	return nil
}

// IsConfigPending lists the server's configuration parameters and reports
// whether any is pending a restart (isConfigPendingRestart).
func (s *SaaSService) IsConfigPending(ctx context.Context, params services.Params) (bool, error) {
	base, server, err := s.serverPath(params)
	if err != nil {
		return false, err
	}
	next := base + "/configurations?api-version=" + s.apiVer
	pending := false
	for pages := 0; next != "" && pages < 100; pages++ {
		r, err := s.arm.send(ctx, http.MethodGet, next, nil)
		if err != nil {
			return false, fmt.Errorf("server %s: list the configuration: %w", server, err)
		}
		var doc struct {
			Value []struct {
				Name       string `json:"name"`
				Properties struct {
					Pending json.RawMessage `json:"isConfigPendingRestart"`
				} `json:"properties"`
			} `json:"value"`
			NextLink string `json:"nextLink"`
		}
		if err := r.json(&doc); err != nil {
			return false, fmt.Errorf("server %s: list the configuration: %w", server, err)
		}
		for _, v := range doc.Value {
			if p := strings.Trim(strings.ToLower(string(v.Properties.Pending)), `"`); p == "true" {
				slog.Debug("azure: configuration parameter pending a restart", "server", server, "parameter", v.Name)
				pending = true
			}
		}
		next = doc.NextLink
	}
	return pending, nil
}

func (s *SaaSService) serverAction(ctx context.Context, params services.Params, action string) error {
	base, server, err := s.serverPath(params)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("server %s: %s", server, action)
	slog.Info("azure: server operation", "server", server, "action", action)
	r, err := s.arm.send(ctx, http.MethodPost, base+"/"+action+"?api-version="+s.apiVer, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.arm.waitAsync(ctx, r, what, time.Now().Add(s.arm.pollTimeout))
}

// RestartHost restarts the server and waits until the restart finished.
func (s *SaaSService) RestartHost(ctx context.Context, params services.Params, _ bool) error {
	return s.serverAction(ctx, params, "restart")
}

// StartHost starts a stopped server.
func (s *SaaSService) StartHost(ctx context.Context, params services.Params) error {
	return s.serverAction(ctx, params, "start")
}

// StopHost stops the server.
func (s *SaaSService) StopHost(ctx context.Context, params services.Params, _ bool) error {
	return s.serverAction(ctx, params, "stop")
}
