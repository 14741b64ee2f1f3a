package armfake

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEval(t *testing.T) {
	s := New(Options{ResourceGroup: "rg1", Location: "eastus"})
	defer s.Close()
	s.others["microsoft.network/publicipaddresses/ip1"] = map[string]any{"name": "ip1",
		"properties": map[string]any{"dnsSettings": map[string]any{"fqdn": "ip1.eastus.cloudapp.azure.com"}}}
	tpl := map[string]any{
		"parameters": map[string]any{
			"vmName": map[string]any{"type": "string"},
			"n":      map[string]any{"type": "int"},
			"list":   map[string]any{"type": "array"},
			"loc":    map[string]any{"type": "string", "defaultValue": "[resourceGroup().location]"},
			// A default using another parameter's default.
			"dns":  map[string]any{"type": "string", "defaultValue": "[toLower(format('{0}-{1}', parameters('vmName'), uniqueString(resourceGroup().id)))]"},
			"self": map[string]any{"type": "string", "defaultValue": "[parameters('self')]"},
		},
		"variables": map[string]any{
			"nic": "[format('{0}-NetInt', parameters('vmName'))]",
			"obj": map[string]any{"path": "[format('/home/{0}', variables('nic'))]"},
		},
	}
	ctx := s.evalCtxLocked(tpl, map[string]any{"vmName": "VM1", "n": int64(3), "list": []any{"a", "b"}})
	id := "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/"
	for in, want := range map[string]any{
		"[parameters('vmName')]":                        "VM1",
		"[parameters('n')]":                             int64(3),
		"[parameters('list')[1]]":                       "b",
		"[concat(parameters('vmName'), '-nic')]":        "VM1-nic",
		"[concat('it''s ', parameters('vmName'))]":      "it's VM1",
		"[[literal]":                                    "[literal]",
		"plain":                                         "plain",
		"[parameters('loc')]":                           "eastus",
		"[resourceGroup().location]":                    "eastus",
		"[resourceGroup().name]":                        "rg1",
		"[variables('nic')]":                            "VM1-NetInt",
		"[variables('obj').path]":                       "/home/VM1-NetInt",
		"[toUpper('a')]":                                "A",
		"[base64('hi')]":                                "aGk=",
		"[if(equals(parameters('n'), 3), 'yes', 'no')]": "yes",
		"[if(equals('a', 'b'), null(), 'else')]":        "else",
		"[empty('')]":                                   true,
		"[string(parameters('n'))]":                     "3",
		"[resourceId('Microsoft.Network/networkSecurityGroups', 'nsg1')]":                        id + "Microsoft.Network/networkSecurityGroups/nsg1",
		"[resourceId('Microsoft.Network/virtualNetworks/subnets', 'vnet1', 'sub1')]":             id + "Microsoft.Network/virtualNetworks/vnet1/subnets/sub1",
		"[reference(resourceId('Microsoft.Network/publicIPAddresses', 'ip1')).dnsSettings.fqdn]": "ip1.eastus.cloudapp.azure.com",
		"[format('ssh {0}@{1}', 'u', 'h')]":                                                      "ssh u@h",
	} {
		got, err := ctx.value(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q = %#v, %v; want %#v", in, got, err, want)
		}
	}
	dns, err := ctx.value("[parameters('dns')]")
	if d, _ := dns.(string); err != nil || !strings.HasPrefix(d, "vm1-") || len(d) != len("vm1-")+13 || d != strings.ToLower(d) {
		t.Errorf("dns label %q, %v", dns, err)
	}
	again, _ := s.evalCtxLocked(tpl, map[string]any{"vmName": "VM1"}).value("[parameters('dns')]")
	if again != dns {
		t.Errorf("uniqueString is not deterministic: %v, %v", dns, again)
	}
	// ARM refuses these; the fake fails the deployment with the message.
	for in, msg := range map[string]string{
		"[parameters('missing')]":             "parameter 'missing' is not found",
		"[variables('missing')]":              "variable 'missing' is not found",
		"[parameters('self')]":                "refers to itself",
		"[listKeys('x', '2021-01-01')]":       "function 'listKeys' is not valid",
		"[concat('a']":                        "is not valid",
		"[reference(resourceId('a/b', 'x'))]": "is not defined",
		"[format('{1}', 'a')]":                "bad placeholder",
	} {
		if got, err := ctx.value(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q = %v, %v; want an error with %q", in, got, err, msg)
		}
	}
}

func do(t *testing.T, s *Server, method, path, token, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL()+path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return resp.StatusCode, resp.Header, m
}

// TestARMBasics checks the fake's answers the services rely on: tokens and
// audiences, missing api-version, unknown resource groups, the deployment
// and operation lifecycle, injected faults.
func TestARMBasics(t *testing.T) {
	s := New(Options{Polls: 1})
	defer s.Close()
	tok := s.IssueToken(AudienceARM, time.Hour)
	rg := "/subscriptions/" + s.Subscription() + "/resourceGroups/" + s.ResourceGroup()
	dep := rg + "/providers/Microsoft.Resources/deployments/d1?api-version=2022-05-01"
	if st, _, _ := do(t, s, "GET", dep, "", ""); st != 401 {
		t.Errorf("no token: %d", st)
	}
	if st, _, _ := do(t, s, "GET", dep, s.IssueToken(AudienceKeyVault, time.Hour), ""); st != 401 {
		t.Errorf("wrong audience: %d", st)
	}
	if st, _, _ := do(t, s, "GET", strings.TrimSuffix(dep, "?api-version=2022-05-01"), tok, ""); st != 400 {
		t.Errorf("no api-version: %d", st)
	}
	if st, _, m := do(t, s, "GET", "/subscriptions/"+s.Subscription()+"/resourceGroups/other/providers/Microsoft.Resources/deployments/d1?api-version=x", tok, ""); st != 404 || !strings.Contains(m["error"].(map[string]any)["code"].(string), "ResourceGroupNotFound") {
		t.Errorf("other rg: %d %v", st, m)
	}
	body := `{"properties": {"mode": "Incremental", "template": {"parameters": {"vmName": {"type": "string"}, "location": {"type": "string", "defaultValue": "westus"}},
		"resources": [{"type": "Microsoft.Compute/virtualMachines", "name": "[parameters('vmName')]", "location": "[parameters('location')]",
		"properties": {"hardwareProfile": {"vmSize": "Standard_B2s"}}}]}, "parameters": {"vmName": {"value": "vm1"}}}}`
	st, h, m := do(t, s, "PUT", dep, tok, body)
	if st != 201 || h.Get("Azure-AsyncOperation") == "" || m["properties"].(map[string]any)["provisioningState"] != "Accepted" {
		t.Fatalf("PUT: %d %v %v", st, h, m)
	}
	if st, _, _ := do(t, s, "PUT", dep, tok, body); st != 409 {
		t.Errorf("PUT while active: %d", st)
	}
	states := []string{}
	for range 3 {
		_, _, m := do(t, s, "GET", dep, tok, "")
		states = append(states, m["properties"].(map[string]any)["provisioningState"].(string))
	}
	if strings.Join(states, ",") != "Running,Succeeded,Succeeded" {
		t.Errorf("states %v", states)
	}
	if vm, ok := s.VM("vm1"); !ok || vm.Location != "westus" || vm.Power != "running" {
		t.Errorf("VM %+v", vm)
	}
	// A VM action and its operation.
	st, h, _ = do(t, s, "POST", rg+"/providers/Microsoft.Compute/virtualMachines/vm1/powerOff?api-version=x", tok, "")
	if st != 202 {
		t.Fatalf("powerOff: %d", st)
	}
	op := strings.TrimPrefix(h.Get("Azure-AsyncOperation"), s.URL())
	_, _, m1 := do(t, s, "GET", op, tok, "")
	_, _, m2 := do(t, s, "GET", op, tok, "")
	if m1["status"] != "InProgress" || m2["status"] != "Succeeded" {
		t.Errorf("operation %v then %v", m1, m2)
	}
	if vm, _ := s.VM("vm1"); vm.Power != "stopped" {
		t.Errorf("power %s", vm.Power)
	}
	// Faults.
	s.Fail("GET", "/deployments/", 429, 2, "3")
	for i := range 3 {
		st, h, _ := do(t, s, "GET", dep, tok, "")
		if i < 2 && (st != 429 || h.Get("Retry-After") != "3") || i == 2 && st != 200 {
			t.Errorf("call %d: %d %v", i, st, h)
		}
	}
	// Undeclared template parameters are refused, as ARM does.
	bad := strings.Replace(body, `"parameters": {"vmName": {"value": "vm1"}}`, `"parameters": {"vmName": {"value": "vm1"}, "extra": {"value": 1}}`, 1)
	if st, _, m := do(t, s, "PUT", rg+"/providers/Microsoft.Resources/deployments/d2?api-version=x", tok, bad); st != 400 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "'extra'") {
		t.Errorf("extra parameter: %d %v", st, m)
	}
	// An expression the fake cannot evaluate: in a parameter default the
	// PUT is refused, in a resource the deployment fails; both name it.
	bad = strings.Replace(body, `"defaultValue": "westus"`, `"defaultValue": "[listKeys('x')]"`, 1)
	if st, _, m := do(t, s, "PUT", rg+"/providers/Microsoft.Resources/deployments/d3?api-version=x", tok, bad); st != 400 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "'listKeys'") {
		t.Errorf("unknown function in a default: %d %v", st, m)
	}
	bad = strings.Replace(body, `"name": "[parameters('vmName')]"`, `"name": "[variables('nope')]"`, 1)
	if st, _, m := do(t, s, "PUT", rg+"/providers/Microsoft.Resources/deployments/d4?api-version=x", tok, bad); st != 201 {
		t.Fatalf("PUT d4: %d %v", st, m)
	}
	for range 2 {
		_, _, m = do(t, s, "GET", rg+"/providers/Microsoft.Resources/deployments/d4?api-version=x", tok, "")
	}
	props := m["properties"].(map[string]any)
	if props["provisioningState"] != "Failed" || !strings.Contains(props["error"].(map[string]any)["message"].(string), "variable 'nope' is not found") {
		t.Errorf("unknown variable in a resource: %v", props)
	}
}

// TestMlosBenchRequestsAndServerStates: the fake refuses mlos_bench's two
// requests that Azure's API does not have (the virtual network POST with
// 404 InvalidResourceType, the PUT to a server's list of configurations
// with 405), answers configuration changes at once with 200 when asked
// to, and keeps a server's state through stop and start (a stopped server
// cannot restart).
func TestMlosBenchRequestsAndServerStates(t *testing.T) {
	s := New(Options{Polls: -1, ConfigurationsAt200: true})
	defer s.Close()
	tok := s.IssueToken(AudienceARM, time.Hour)
	rg := "/subscriptions/" + s.Subscription() + "/resourceGroups/" + s.ResourceGroup()
	st, _, body := do(t, s, "POST", rg+"/providers/Microsoft.Network/virtualNetwork/v1/delete?api-version=2023-05-01", tok, "")
	if e, _ := body["error"].(map[string]any); st != 404 || e["code"] != "InvalidResourceType" || !strings.Contains(e["message"].(string), "'virtualNetwork'") {
		t.Errorf("mlos_bench's network deletion: %d %v", st, body)
	}
	s.AddServer("Microsoft.DBforMySQL", "flexibleServers", "db", map[string]DBConfig{"x": {Value: "1"}})
	srv := rg + "/providers/Microsoft.DBforMySQL/flexibleServers/db"
	if st, _, _ := do(t, s, "PUT", srv+"/configurations?api-version=2022-01-01", tok, ""); st != 405 {
		t.Errorf("PUT to the list of configurations: %d", st)
	}
	st, _, body = do(t, s, "PUT", srv+"/configurations/x?api-version=2022-01-01", tok, `{"properties": {"value": "2"}}`)
	if p, _ := body["properties"].(map[string]any); st != 200 || p["value"] != "2" {
		t.Errorf("change answered at 200: %d %v", st, body)
	}
	st, _, body = do(t, s, "POST", srv+"/updateConfigurations?api-version=2022-01-01", tok, `{"value": [{"name": "x", "properties": {"value": "3"}}]}`)
	if db, _ := s.DBServer("Microsoft.DBforMySQL", "flexibleServers", "db"); st != 200 || db.Configs["x"].Value != "3" || db.Updates != 2 {
		t.Errorf("batch answered at 200: %d %v, server %+v", st, body, db)
	}
	state := func() any {
		_, _, b := do(t, s, "GET", srv+"?api-version=2022-01-01", tok, "")
		p, _ := b["properties"].(map[string]any)
		return p["state"]
	}
	poll := func(h http.Header) {
		if st, _, b := do(t, s, "GET", strings.TrimPrefix(h.Get("Azure-AsyncOperation"), s.URL()), tok, ""); st != 200 || b["status"] != "Succeeded" {
			t.Fatalf("operation: %d %v", st, b)
		}
	}
	if state() != "Ready" {
		t.Fatalf("state %v", state())
	}
	_, h, _ := do(t, s, "POST", srv+"/stop?api-version=2022-01-01", tok, "")
	poll(h)
	if state() != "Stopped" {
		t.Errorf("after stop: %v", state())
	}
	if st, _, _ := do(t, s, "POST", srv+"/restart?api-version=2022-01-01", tok, ""); st != 409 {
		t.Errorf("restart of a stopped server: %d", st)
	}
	_, h, _ = do(t, s, "POST", srv+"/start?api-version=2022-01-01", tok, "")
	poll(h)
	if db, _ := s.DBServer("Microsoft.DBforMySQL", "flexibleServers", "db"); db.State != "Ready" || db.Starts != 1 {
		t.Errorf("after start: %+v", db)
	}
}
