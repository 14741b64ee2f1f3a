package azure

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benchtune/bench/internal/armfake"
	"github.com/benchtune/bench/services"
)

func saasConfig(srv *armfake.Server, provider string) map[string]any {
	return map[string]any{
		"subscription":  srv.Subscription(),
		"resourceGroup": srv.ResourceGroup(),
		"vmName":        "PLACEHOLDER",
		"provider":      provider,
		"pollInterval":  0.02,
		"pollTimeout":   10,
	}
}

func newSaaS(t *testing.T, srv *armfake.Server, cfg, globals map[string]any) *SaaSService {
	t.Helper()
	svc, err := newSvc(t, SaaSClassShort, cfg, globals, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	return svc.(*SaaSService)
}

// newSaaSOps builds the service with bench_azure_fixes.
func newSaaSOps(t *testing.T, srv *armfake.Server, cfg, globals map[string]any) SaaSServerOps {
	t.Helper()
	cfg["bench_azure_fixes"] = true
	svc, err := newSvc(t, SaaSClassShort, cfg, globals, armAuth(srv))
	if err != nil {
		t.Fatal(err)
	}
	return svc.(SaaSServerOps)
}

// TestSaaSConfigure (bench_azure_fixes: Azure's 202 answers followed, the
// server restarted by the service) sets parameters on each kind of
// server: MySQL flexible servers in one batch, PostgreSQL flexible servers
// and MariaDB servers one by one; values are sent as Python's str() writes
// them; a static parameter leaves the server pending a restart until it
// restarts; a start asked for after it finds the server running and does
// nothing, and starts a stopped one.
func TestSaaSConfigure(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	for _, tc := range []struct {
		provider, kind string
		batch          bool
	}{
		{"Microsoft.DBforMySQL", "flexibleServers", true},
		{"Microsoft.DBforPostgreSQL", "flexibleServers", false},
		{"Microsoft.DBforMariaDB", "servers", false},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			name := strings.ToLower(strings.TrimPrefix(tc.provider, "Microsoft.DBfor")) + "-srv"
			cfgs := map[string]armfake.DBConfig{
				"innodb_buffer_pool_size":    {Value: "134217728", Static: true},
				"innodb_adaptive_hash_index": {Value: "ON", Allowed: []string{"ON", "OFF"}},
				"ratio":                      {Value: "0.1"},
			}
			for i := range 25 { // more than one page of configurations
				cfgs["filler_"+string(rune('a'+i))] = armfake.DBConfig{Value: "1"}
			}
			srv.AddServer(tc.provider, tc.kind, name, cfgs)
			s := newSaaSOps(t, srv, saasConfig(srv, tc.provider), map[string]any{"vmName": name})
			pending, err := s.IsConfigPending(ctx, services.Params{})
			if err != nil || pending {
				t.Fatalf("pending %v, %v before any change", pending, err)
			}
			err = s.Configure(ctx, services.Params{}, map[string]any{"innodb_adaptive_hash_index": "OFF", "ratio": 0.5})
			if err != nil {
				t.Fatal(err)
			}
			db, _ := srv.DBServer(tc.provider, tc.kind, name)
			if db.Configs["innodb_adaptive_hash_index"].Value != "OFF" || db.Configs["ratio"].Value != "0.5" {
				t.Errorf("configs after Configure: %+v %+v", db.Configs["innodb_adaptive_hash_index"], db.Configs["ratio"])
			}
			wantUpdates := 2
			if tc.batch {
				wantUpdates = 1
			}
			if db.Updates != wantUpdates {
				t.Errorf("%d configuration writes, want %d", db.Updates, wantUpdates)
			}
			if pending, err := s.IsConfigPending(ctx, services.Params{}); err != nil || pending {
				t.Errorf("dynamic parameters: pending %v, %v", pending, err)
			}
			// A static parameter: pending until the restart (vmName from the
			// environment's parameters overrides the config's).
			if err := s.Configure(ctx, services.Params{"vmName": name}, map[string]any{"innodb_buffer_pool_size": int64(268435456)}); err != nil {
				t.Fatal(err)
			}
			if pending, err := s.IsConfigPending(ctx, services.Params{}); err != nil || !pending {
				t.Fatalf("static parameter: pending %v, %v", pending, err)
			}
			if err := s.RestartHost(ctx, services.Params{}, false); err != nil {
				t.Fatal(err)
			}
			db, _ = srv.DBServer(tc.provider, tc.kind, name)
			if db.Restarts != 1 || db.Configs["innodb_buffer_pool_size"].Value != "268435456" {
				t.Errorf("restarts %d, value %s", db.Restarts, db.Configs["innodb_buffer_pool_size"].Value)
			}
			if pending, _ := s.IsConfigPending(ctx, services.Params{}); pending {
				t.Error("still pending after the restart")
			}
			if err := s.StartHost(ctx, services.Params{}); err != nil {
				t.Fatal(err)
			}
			if n := srv.CountCalls(http.MethodPost, "/"+name+"/start"); n != 0 {
				t.Errorf("%d start calls on a running server", n)
			}
			if err := s.StopHost(ctx, services.Params{}, false); err != nil {
				t.Fatal(err)
			}
			if err := s.StartHost(ctx, services.Params{}); err != nil {
				t.Fatal(err)
			}
			if db, _ := srv.DBServer(tc.provider, tc.kind, name); db.Starts != 1 || db.State != "Ready" {
				t.Errorf("after stop and start: %d starts, state %s", db.Starts, db.State)
			}
			// A value the server refuses, and an unknown parameter.
			err = s.Configure(ctx, services.Params{}, map[string]any{"innodb_adaptive_hash_index": "MAYBE"})
			if err == nil || !strings.Contains(err.Error(), "InvalidConfigurationValue") {
				t.Errorf("error = %v", err)
			}
			err = s.Configure(ctx, services.Params{}, map[string]any{"no_such_param": 1})
			if err == nil || !strings.Contains(err.Error(), "ConfigurationNotExists") {
				t.Errorf("error = %v", err)
			}
		})
	}
}

func TestSaaSFaultsAndConfig(t *testing.T) {
	srv := StartFake(t, armfake.Options{RetryAfter: "0"})
	ctx := context.Background()
	srv.AddServer("Microsoft.DBforMySQL", "flexibleServers", "db1", map[string]armfake.DBConfig{"x": {Value: "1"}})
	cfg := saasConfig(srv, "Microsoft.DBforMySQL")
	s := newSaaSOps(t, srv, cfg, map[string]any{"vmName": "db1"})
	// Throttled batch update: retried.
	srv.Fail(http.MethodPost, "/updateConfigurations", http.StatusTooManyRequests, 1, "0")
	if err := s.Configure(ctx, services.Params{}, map[string]any{"x": 2}); err != nil {
		t.Fatal(err)
	}
	// A restart that never finishes: timeout.
	cfg["pollTimeout"] = 0.3
	s = newSaaSOps(t, srv, cfg, map[string]any{"vmName": "db1"})
	srv.Stick("db1")
	if err := s.RestartHost(ctx, services.Params{}, false); !errors.Is(err, services.ErrTimeout) {
		t.Errorf("error = %v", err)
	}
	// 504 from the gateway maps to a timeout too.
	cfg["requestTotalRetries"] = 1
	s2 := newSaaSOps(t, srv, cfg, map[string]any{"vmName": "db1"})
	srv.Fail(http.MethodGet, "/configurations", http.StatusGatewayTimeout, 2, "")
	start := time.Now()
	if _, err := s2.IsConfigPending(ctx, services.Params{}); !errors.Is(err, services.ErrTimeout) {
		t.Errorf("error = %v (%s)", err, time.Since(start))
	}
	// Config errors.
	for _, tc := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"subscription": "s", "resourceGroup": "r"}, "/config/provider: is required"},
		{map[string]any{"subscription": "s", "resourceGroup": "r", "provider": "Microsoft.DBforOther"}, "give supportsBatchUpdate, isFlex and apiVersion"},
		{map[string]any{"subscription": "s", "resourceGroup": "r", "provider": "Microsoft.DBforMySQL", "is_flex": true}, `unknown config key "is_flex"`},
	} {
		if _, err := newSvc(t, SaaSClassFull, tc.cfg, nil, armAuth(srv)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error = %v, want %q", err, tc.want)
		}
	}
	// No server name.
	s3 := newSaaS(t, srv, map[string]any{"subscription": srv.Subscription(), "resourceGroup": srv.ResourceGroup(), "provider": "Microsoft.DBforPostgreSQL"}, nil)
	if err := s3.Configure(ctx, services.Params{}, map[string]any{"a": 1}); err == nil || !strings.Contains(err.Error(), "needs the vmName parameter") {
		t.Errorf("error = %v", err)
	}
}

// TestSaaSAsMlosBench: without bench_azure_fixes the service makes
// mlos_bench's requests and reads the answers as mlos_bench does: it has
// no host operations; a configuration change Azure answers with 202
// Accepted fails (with a message naming the option), one answered 200 OK
// succeeds, without "source" in a single parameter's body; 504 is a
// timeout; the pending-restart check PUTs to the list of configurations,
// which Azure does not serve.
func TestSaaSAsMlosBench(t *testing.T) {
	ctx := context.Background()
	configs := map[string]armfake.DBConfig{"innodb_adaptive_hash_index": {Value: "ON"}, "join_buffer_size": {Value: "262144"}}
	for _, provider := range []string{"Microsoft.DBforMySQL", "Microsoft.DBforPostgreSQL"} {
		t.Run(provider, func(t *testing.T) {
			srv := StartFake(t, armfake.Options{RetryAfter: "0"})
			srv.AddServer(provider, "flexibleServers", "db", configs)
			svc, err := newSvc(t, SaaSClassShort, saasConfig(srv, provider), map[string]any{"vmName": "db"}, armAuth(srv))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := svc.(services.HostOps); ok {
				t.Error("the service provides host operations without bench_azure_fixes")
			}
			s := svc.(*SaaSService)
			err = s.Configure(ctx, services.Params{}, map[string]any{"innodb_adaptive_hash_index": "OFF"})
			if err == nil || !strings.Contains(err.Error(), "HTTP 202") || !strings.Contains(err.Error(), "accepts only 200 OK") || !strings.Contains(err.Error(), `"bench_azure_fixes": true`) {
				t.Errorf("202 answer: error = %v", err)
			}
			_, err = s.IsConfigPending(ctx, services.Params{})
			if err == nil || !strings.Contains(err.Error(), "HTTP 405") || !strings.Contains(err.Error(), "mlos_bench's PUT") {
				t.Errorf("pending check: error = %v", err)
			}
			if n := srv.CountCalls(http.MethodPut, "/db/configurations?"); n != 1 {
				t.Errorf("%d PUT calls to the list of configurations, want 1", n)
			}
			if n := srv.CountCalls(http.MethodGet, "/configurations"); n != 0 {
				t.Errorf("%d GET calls to the list of configurations, want none", n)
			}
		})
	}
	srv := StartFake(t, armfake.Options{RetryAfter: "0", ConfigurationsAt200: true})
	for _, provider := range []string{"Microsoft.DBforMySQL", "Microsoft.DBforPostgreSQL"} {
		srv.AddServer(provider, "flexibleServers", "db-"+provider, configs)
		s := newSaaS(t, srv, saasConfig(srv, provider), map[string]any{"vmName": "db-" + provider})
		if err := s.Configure(ctx, services.Params{}, map[string]any{"innodb_adaptive_hash_index": "OFF", "join_buffer_size": 4096}); err != nil {
			t.Fatalf("%s, 200 answers: %v", provider, err)
		}
		db, _ := srv.DBServer(provider, "flexibleServers", "db-"+provider)
		if db.Configs["innodb_adaptive_hash_index"].Value != "OFF" || db.Configs["join_buffer_size"].Value != "4096" {
			t.Errorf("%s: configs %+v %+v", provider, db.Configs["innodb_adaptive_hash_index"], db.Configs["join_buffer_size"])
		}
	}
	if b := srv.LastBody(http.MethodPut, "/configurations/join_buffer_size"); b == "" || strings.Contains(b, "source") {
		t.Errorf("single parameter body = %q, want only the value", b)
	}
	// 504: a timeout, as in mlos_bench.
	cfg := saasConfig(srv, "Microsoft.DBforMySQL")
	cfg["requestTotalRetries"] = 1
	s := newSaaS(t, srv, cfg, map[string]any{"vmName": "db-Microsoft.DBforMySQL"})
	srv.Fail(http.MethodPost, "/updateConfigurations", http.StatusGatewayTimeout, 2, "")
	if err := s.Configure(ctx, services.Params{}, map[string]any{"join_buffer_size": 8192}); !errors.Is(err, services.ErrTimeout) {
		t.Errorf("504: error = %v", err)
	}
}
