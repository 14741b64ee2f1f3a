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

// TestSaaSConfigure sets parameters on each kind of server: MySQL flexible
// servers in one batch, PostgreSQL flexible servers and MariaDB servers
// one by one; values are sent as Python's str() writes them; a static
// parameter leaves the server pending a restart until it restarts.
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
			s := newSaaS(t, srv, saasConfig(srv, tc.provider), map[string]any{"vmName": name})
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
	s := newSaaS(t, srv, cfg, map[string]any{"vmName": "db1"})
	// Throttled batch update: retried.
	srv.Fail(http.MethodPost, "/updateConfigurations", http.StatusTooManyRequests, 1, "0")
	if err := s.Configure(ctx, services.Params{}, map[string]any{"x": 2}); err != nil {
		t.Fatal(err)
	}
	// A restart that never finishes: timeout.
	cfg["pollTimeout"] = 0.3
	s = newSaaS(t, srv, cfg, map[string]any{"vmName": "db1"})
	srv.Stick("db1")
	if err := s.RestartHost(ctx, services.Params{}, false); !errors.Is(err, services.ErrTimeout) {
		t.Errorf("error = %v", err)
	}
	// 504 from the gateway maps to a timeout too.
	cfg["requestTotalRetries"] = 1
	s2 := newSaaS(t, srv, cfg, map[string]any{"vmName": "db1"})
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
