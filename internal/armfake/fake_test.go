package armfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestEval(t *testing.T) {
	params := map[string]any{"vmName": "vm1", "n": int64(3), "list": []any{"a"}}
	for in, want := range map[string]any{
		"[parameters('vmName')]":                   "vm1",
		"[parameters('n')]":                        int64(3),
		"[concat(parameters('vmName'), '-nic')]":   "vm1-nic",
		"[concat('it''s ', parameters('vmName'))]": "it's vm1",
		"[[literal]":                               "[[literal]",
		"plain":                                    "plain",
		"[resourceGroup().location]":               "[resourceGroup().location]",
		"[concat(parameters('missing'), 'x')]":     "[concat(parameters('missing'), 'x')]",
	} {
		if got := eval(in, params); got != want {
			t.Errorf("eval(%q) = %v, want %v", in, got, want)
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
}
