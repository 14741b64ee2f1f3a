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
	// Fixes (bench only, bench_azure_fixes) sends the requests Azure's
	// API documents where mlos_bench's would fail: see SaaSService.
	Fixes bool `json:"bench_azure_fixes"`
}

// SaaSService sets the configuration parameters of an Azure database
// server (MySQL or PostgreSQL flexible server, MariaDB server) from the
// tunable values, as mlos_bench's AzureSaaSConfigService: one PUT per
// parameter, or one batch POST where the server supports it (MySQL
// flexible servers).
//
// By default it makes mlos_bench's requests and reads their answers as
// mlos_bench does: a change succeeds only on an immediate 200 OK (Azure's
// 202 Accepted fails it); the check for a pending restart PUTs to the list
// of configurations; and it has no host operations, so SaaSEnv restarts
// through another host service of the stack, as mlos_bench's does. With
// bench_azure_fixes (SaaSServerOps) it follows 202 answers to the end,
// sends "source": "user-override" with a single parameter, reads the list
// of configurations with GET (every page), and restarts, starts and stops
// the database server itself.
type SaaSService struct {
	arm      *armClient
	cfg      SaaSConfig
	batch    bool
	kind     string // flexibleServers or servers
	apiVer   string
	provider string
	fixes    bool
}

// SaaSServerOps is AzureSaaSConfigService with bench_azure_fixes: it also
// provides host operations on the database server.
type SaaSServerOps struct{ *SaaSService }

var (
	_ services.RemoteConfig = (*SaaSService)(nil)
	_ services.RemoteConfig = SaaSServerOps{}
	_ services.HostOps      = SaaSServerOps{}
)

func newSaaSFromSpec(_ context.Context, spec services.Spec) (any, error) {
	var c SaaSConfig
	if err := services.DecodeConfig(spec, &c); err != nil {
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
	if s.fixes {
		return SaaSServerOps{s}, nil
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
	return &SaaSService{arm: arm, cfg: c, batch: batch, kind: kind, apiVer: api, provider: c.Provider, fixes: c.Fixes}, nil
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
// mlos_bench sends them). Azure answers 200 OK (done) or 202 Accepted (an
// operation in progress): by default only 200 succeeds, as in mlos_bench;
// with bench_azure_fixes the operation is followed until it finished.
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
		return s.answered(ctx, r, what, deadline)
	}
	for _, k := range names {
		what := fmt.Sprintf("server %s: set %s", server, k)
		slog.Debug("azure: setting a server configuration parameter", "server", server, "parameter", k)
		props := map[string]any{"value": configs.PyStr(settings[k])}
		if s.fixes {
			props["source"] = "user-override"
		}
		r, err := s.arm.send(ctx, http.MethodPut, base+"/configurations/"+url.PathEscape(k)+"?api-version="+s.apiVer,
			map[string]any{"properties": props})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		// pollTimeout bounds each parameter's change.
		if err := s.answered(ctx, r, what, time.Now().Add(s.arm.pollTimeout)); err != nil {
			return err
		}
	}
	return nil
}

// answered reads Azure's answer to a configuration change: mlos_bench
// accepts only 200 OK; with bench_azure_fixes an operation (201, 202) is
// followed to its end.
func (s *SaaSService) answered(ctx context.Context, r *response, what string, deadline time.Time) error {
	if s.fixes {
		return s.arm.waitAsync(ctx, r, what, deadline)
	}
	if r.status != http.StatusOK {
		return fmt.Errorf("%s: Azure answered HTTP %d %s, and mlos_bench's AzureSaaSConfigService accepts only 200 OK, so the change counts as failed; set \"bench_azure_fixes\": true on the service to follow Azure's asynchronous answers (bench only)", what, r.status, http.StatusText(r.status))
	}
	return nil
}

// IsConfigPending reports whether any of the server's configuration
// parameters is pending a restart (isConfigPendingRestart). By default it
// sends mlos_bench's request, a PUT without a body to the list of
// configurations (Azure's API lists them with GET only), reads one page
// and takes only the strings "True" and "False", as mlos_bench does. With
// bench_azure_fixes it lists them with GET, every page, and also takes
// JSON booleans.
func (s *SaaSService) IsConfigPending(ctx context.Context, params services.Params) (bool, error) {
	base, server, err := s.serverPath(params)
	if err != nil {
		return false, err
	}
	next := base + "/configurations?api-version=" + s.apiVer
	method, what := http.MethodGet, "list the configuration"
	if !s.fixes {
		method, what = http.MethodPut, "check for a pending restart (mlos_bench's PUT to the list of configurations; bench_azure_fixes lists it with GET)"
	}
	pending := false
	for pages := 0; next != "" && pages < 100; pages++ {
		r, err := s.arm.send(ctx, method, next, nil)
		if err != nil {
			return false, fmt.Errorf("server %s: %s: %w", server, what, err)
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
			return false, fmt.Errorf("server %s: %s: %w", server, what, err)
		}
		for _, v := range doc.Value {
			raw := string(v.Properties.Pending)
			if !s.fixes && raw != `"True"` && raw != `"False"` {
				return false, fmt.Errorf("server %s: %s: parameter %s: isConfigPendingRestart is %s, and mlos_bench takes only \"True\" or \"False\" (bench_azure_fixes also takes JSON booleans)", server, what, v.Name, raw)
			}
			if p := strings.Trim(strings.ToLower(raw), `"`); p == "true" {
				slog.Debug("azure: configuration parameter pending a restart", "server", server, "parameter", v.Name)
				pending = true
			}
		}
		if !s.fixes {
			break // mlos_bench reads the first page only
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
func (s SaaSServerOps) RestartHost(ctx context.Context, params services.Params, _ bool) error {
	return s.serverAction(ctx, params, "restart")
}

// StartHost starts the server if it is stopped (SaaSEnv, as mlos_bench's,
// asks for a start after each restart; a running server is left alone).
func (s SaaSServerOps) StartHost(ctx context.Context, params services.Params) error {
	base, server, err := s.serverPath(params)
	if err != nil {
		return err
	}
	r, err := s.arm.send(ctx, http.MethodGet, base+"?api-version="+s.apiVer, nil)
	if err != nil {
		return fmt.Errorf("server %s: read its state: %w", server, err)
	}
	var doc struct {
		Properties struct {
			State            string `json:"state"`
			UserVisibleState string `json:"userVisibleState"`
		} `json:"properties"`
	}
	if err := r.json(&doc); err != nil {
		return fmt.Errorf("server %s: read its state: %w", server, err)
	}
	state := doc.Properties.State
	if state == "" {
		state = doc.Properties.UserVisibleState
	}
	if !strings.EqualFold(state, "Stopped") {
		slog.Debug("azure: server not stopped; no start needed", "server", server, "state", state)
		return nil
	}
	return s.serverAction(ctx, params, "start")
}

// StopHost stops the server.
func (s SaaSServerOps) StopHost(ctx context.Context, params services.Params, _ bool) error {
	return s.serverAction(ctx, params, "stop")
}
