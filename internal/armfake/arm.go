package armfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

// VM is a fake virtual machine.
type VM struct {
	Name, Location, Size string
	// Power is "running", "stopped" or "deallocated".
	Power string
	// Deployment is the deployment that created it.
	Deployment string
}

// RunCommand is a Run Command the fake received.
type RunCommand struct {
	VM, Name, Script string
	// Params are the protectedParameters (name -> value).
	Params  map[string]string
	Timeout int

	state    string // Running, Succeeded, Failed, TimedOut
	exitCode int
	out, err string
	start    time.Time
	end      time.Time
}

// DBConfig is a configuration parameter of a fake database server.
type DBConfig struct {
	Value, Default string
	// Static parameters take effect after a restart: setting one makes
	// isConfigPendingRestart true until the server restarts.
	Static  bool
	Pending bool
	// Allowed, when set, lists the accepted values.
	Allowed []string
}

// DBServer is a fake MySQL/PostgreSQL flexible server or MariaDB server.
type DBServer struct {
	Provider, Kind, Name string
	Configs              map[string]*DBConfig
	Restarts             int
	// Updates counts configuration writes (one per PUT, one per batch).
	Updates int
	// State is the server's state, "Ready" or "Stopped" (stop and start
	// change it); Starts counts the start operations.
	State  string
	Starts int
}

type operation struct {
	id, resource string
	polls        int
	status       string
	errMsg       string
	apply        func() string // on success; a non-empty result fails the operation
}

type deployment struct {
	name     string
	template map[string]any
	params   map[string]any
	state    string
	polls    int
	outputs  map[string]any
	errMsg   string
}

// AddServer creates a database server. provider is e.g.
// "Microsoft.DBforMySQL", kind "flexibleServers" or "servers".
func (s *Server) AddServer(provider, kind, name string, configs map[string]DBConfig) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv := &DBServer{Provider: provider, Kind: kind, Name: name, Configs: map[string]*DBConfig{}, State: "Ready"}
	for k, c := range configs {
		c := c
		if c.Default == "" {
			c.Default = c.Value
		}
		srv.Configs[k] = &c
	}
	s.servers[strings.ToLower(provider+"/"+kind+"/"+name)] = srv
}

// Server returns a copy of a database server.
func (s *Server) DBServer(provider, kind, name string) (DBServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[strings.ToLower(provider+"/"+kind+"/"+name)]
	if !ok {
		return DBServer{}, false
	}
	out := *srv
	out.Configs = map[string]*DBConfig{}
	for k, c := range srv.Configs {
		c := *c
		out.Configs[k] = &c
	}
	return out, true
}

// VM returns a copy of a virtual machine.
func (s *Server) VM(name string) (VM, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm, ok := s.vms[name]
	if !ok {
		return VM{}, false
	}
	return *vm, true
}

// SetPower sets a VM's power state (e.g. to simulate a VM stopped from
// the portal).
func (s *Server) SetPower(name, power string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if vm, ok := s.vms[name]; ok {
		vm.Power = power
	}
}

// VNet returns a virtual network's resource (as deployed), if it exists.
func (s *Server) VNet(name string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vnets[name]
	return v, ok
}

// Resource returns a deployed resource ("type/name") as the template
// declared it, its expressions evaluated (for a VM: as last deployed; its
// state is VM's).
func (s *Server) Resource(typeName string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.others[strings.ToLower(typeName)]
	return v, ok
}

// DeploymentParams returns the parameters a deployment received.
func (s *Server) DeploymentParams(name string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deployments[name]
	if !ok {
		return nil, false
	}
	return d.params, true
}

// DeploymentOutputs returns the outputs of a finished deployment (nil
// while it runs).
func (s *Server) DeploymentOutputs(name string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deployments[name]
	if !ok {
		return nil, false
	}
	return d.outputs, true
}

// RunCommands returns the Run Commands received, oldest first.
func (s *Server) RunCommands() []RunCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []RunCommand
	for _, c := range s.runLog {
		out = append(out, *c)
	}
	return out
}

func (s *Server) opURL(id string) string {
	if s.opBase != "" {
		return s.opBase + "/subscriptions/" + s.opts.Subscription + "/providers/Microsoft.Fake/operations/" + id + "?api-version=fake"
	}
	return s.URL() + "/subscriptions/" + s.opts.Subscription + "/providers/Microsoft.Fake/operations/" + id + "?api-version=fake"
}

// startOpLocked registers an operation on resource and writes the 202 (or
// status) answer with its polling headers.
func (s *Server) startOpLocked(w http.ResponseWriter, status int, resource string, body any, apply func() string) {
	op := &operation{id: s.newIDLocked(), resource: resource, polls: s.opts.Polls, status: "InProgress", apply: apply}
	s.ops[op.id] = op
	w.Header().Set("Azure-AsyncOperation", s.opURL(op.id))
	w.Header().Set("Location", s.opURL(op.id)+"&monitor=location")
	if s.opts.RetryAfter != "" {
		w.Header().Set("Retry-After", s.opts.RetryAfter)
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, body)
}

// pollOpLocked advances an operation by one poll.
func (s *Server) pollOpLocked(op *operation) {
	if op.status != "InProgress" || s.stuck[op.resource] {
		return
	}
	if op.polls > 0 {
		op.polls--
		return
	}
	if s.failing[op.resource] {
		op.status, op.errMsg = "Failed", "the operation on "+op.resource+" failed (injected)"
		return
	}
	if msg := op.apply(); msg != "" {
		op.status, op.errMsg = "Failed", msg
		return
	}
	op.status = "Succeeded"
}

// armPath is a parsed ARM resource path.
type armPath struct {
	sub, rg, provider, typ, name string
	rest                         []string
}

func parseARM(p string) (armPath, bool) {
	seg := strings.Split(strings.Trim(p, "/"), "/")
	var a armPath
	if len(seg) < 2 || seg[0] != "subscriptions" {
		return a, false
	}
	a.sub = seg[1]
	seg = seg[2:]
	if len(seg) >= 2 && strings.EqualFold(seg[0], "resourceGroups") {
		a.rg = seg[1]
		seg = seg[2:]
	}
	if len(seg) < 2 || seg[0] != "providers" {
		return a, false
	}
	a.provider = seg[1]
	seg = seg[2:]
	if len(seg) >= 1 {
		a.typ = seg[0]
	}
	if len(seg) >= 2 {
		a.name = seg[1]
	}
	if len(seg) > 2 {
		a.rest = seg[2:]
	}
	return a, true
}

func (s *Server) serveARM(w http.ResponseWriter, r *http.Request, body []byte) {
	a, ok := parseARM(r.URL.Path)
	if !ok {
		writeError(w, fail(http.StatusBadRequest, "InvalidResourceId", "cannot parse %s", r.URL.Path))
		return
	}
	if a.sub != s.opts.Subscription {
		writeError(w, fail(http.StatusNotFound, "SubscriptionNotFound", "the subscription '%s' could not be found", a.sub))
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		writeError(w, fail(http.StatusBadRequest, "MissingApiVersionParameter", "the api-version query parameter (?api-version=) is required for all requests"))
		return
	}
	if a.rg == "" && a.provider == "Microsoft.Fake" && a.typ == "operations" {
		s.serveOperation(w, r, a.name)
		return
	}
	if a.rg != s.opts.ResourceGroup {
		writeError(w, fail(http.StatusNotFound, "ResourceGroupNotFound", "resource group '%s' could not be found", a.rg))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var e *apiError
	switch {
	case strings.EqualFold(a.provider, "Microsoft.Resources") && a.typ == "deployments" && len(a.rest) == 0:
		e = s.serveDeploymentLocked(w, r, a.name, body)
	case strings.EqualFold(a.provider, "Microsoft.Compute") && a.typ == "virtualMachines":
		e = s.serveVMLocked(w, r, a, body)
	case strings.EqualFold(a.provider, "Microsoft.Network") && a.typ == "virtualNetworks" && len(a.rest) == 0:
		e = s.serveVNetLocked(w, r, a.name)
	case strings.HasPrefix(a.provider, "Microsoft.DBfor"):
		e = s.serveDBLocked(w, r, a, body)
	case strings.EqualFold(a.provider, "Microsoft.Network") && a.typ == "virtualNetwork":
		// mlos_bench's deprovisioning request (POST .../virtualNetwork/<name>/delete):
		// ARM has no such resource type, and answers an unknown type of a
		// namespace with 404 InvalidResourceType.
		e = fail(http.StatusNotFound, "InvalidResourceType", "The resource type '%s' could not be found in the namespace '%s' for api version '%s'.", a.typ, a.provider, r.URL.Query().Get("api-version"))
	default:
		e = fail(http.StatusBadRequest, "NoRegisteredProviderFound", "the fake serves no %s/%s", a.provider, a.typ)
	}
	if e != nil {
		writeError(w, e)
	}
}

func (s *Server) serveOperation(w http.ResponseWriter, r *http.Request, id string) {
	s.mu.Lock()
	op, ok := s.ops[id]
	if ok {
		s.pollOpLocked(op)
	}
	var st, msg string
	if ok {
		st, msg = op.status, op.errMsg
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, fail(http.StatusNotFound, "OperationNotFound", "no operation %s", id))
		return
	}
	if st == "InProgress" && s.opts.RetryAfter != "" {
		w.Header().Set("Retry-After", s.opts.RetryAfter)
	}
	if r.URL.Query().Get("monitor") == "location" {
		switch st {
		case "InProgress":
			w.WriteHeader(http.StatusAccepted)
		case "Succeeded":
			w.WriteHeader(http.StatusOK)
		default:
			writeError(w, fail(http.StatusConflict, "OperationFailed", "%s", msg))
		}
		return
	}
	out := map[string]any{"name": id, "status": st, "startTime": time.Now().UTC().Format(time.RFC3339Nano)}
	if st == "Failed" {
		out["error"] = map[string]any{"code": "OperationFailed", "message": msg}
	}
	writeJSON(w, http.StatusOK, out)
}

// ---- deployments ----

func (s *Server) serveDeploymentLocked(w http.ResponseWriter, r *http.Request, name string, body []byte) *apiError {
	switch r.Method {
	case http.MethodGet:
		d, ok := s.deployments[name]
		if !ok {
			return fail(http.StatusNotFound, "DeploymentNotFound", "deployment '%s' could not be found", name)
		}
		s.advanceDeploymentLocked(d)
		if d.state == "Running" && s.opts.RetryAfter != "" {
			w.Header().Set("Retry-After", s.opts.RetryAfter)
		}
		writeJSON(w, http.StatusOK, s.deploymentJSON(d))
		return nil
	case http.MethodPut:
		var req struct {
			Properties struct {
				Mode       string                    `json:"mode"`
				Template   map[string]any            `json:"template"`
				Parameters map[string]map[string]any `json:"parameters"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return fail(http.StatusBadRequest, "InvalidRequestContent", "the request content was invalid: %v", err)
		}
		if req.Properties.Mode != "Incremental" && req.Properties.Mode != "Complete" {
			return fail(http.StatusBadRequest, "InvalidDeploymentMode", "the deployment mode %q is not valid", req.Properties.Mode)
		}
		tpl := req.Properties.Template
		if tpl == nil {
			return fail(http.StatusBadRequest, "InvalidTemplate", "the deployment has no template")
		}
		if _, ok := tpl["resources"].([]any); !ok {
			return fail(http.StatusBadRequest, "InvalidTemplate", "the template has no resources array")
		}
		declared, _ := tpl["parameters"].(map[string]any)
		ctx := s.evalCtxLocked(tpl, map[string]any{})
		for k, v := range req.Properties.Parameters {
			if _, ok := declared[k]; !ok {
				return fail(http.StatusBadRequest, "InvalidTemplate", "the template parameters '%s' in the parameters file are not valid; they are not present in the original template", k)
			}
			ctx.params[k] = v["value"]
		}
		for k := range declared {
			if _, err := ctx.param(k); err != nil {
				return fail(http.StatusBadRequest, "InvalidTemplate", "%v", err)
			}
		}
		params := ctx.params
		if old, ok := s.deployments[name]; ok && (old.state == "Accepted" || old.state == "Running") {
			return fail(http.StatusConflict, "DeploymentActive", "unable to edit or replace deployment '%s': previous deployment is still active", name)
		}
		status := http.StatusCreated
		if _, ok := s.deployments[name]; ok {
			status = http.StatusOK
		}
		d := &deployment{name: name, template: tpl, params: params, state: "Accepted", polls: s.opts.Polls}
		s.deployments[name] = d
		op := &operation{id: s.newIDLocked(), resource: name, status: "InProgress", apply: func() string { return "" }}
		s.ops[op.id] = op
		w.Header().Set("Azure-AsyncOperation", s.opURL(op.id))
		writeJSON(w, status, s.deploymentJSON(d))
		return nil
	}
	return fail(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s is not allowed on a deployment", r.Method)
}

func (s *Server) deploymentJSON(d *deployment) map[string]any {
	params := map[string]any{}
	for k, v := range d.params {
		params[k] = map[string]any{"value": v}
	}
	props := map[string]any{"provisioningState": d.state, "mode": "Incremental", "parameters": params}
	if d.outputs != nil {
		outs := map[string]any{}
		for k, v := range d.outputs {
			outs[k] = map[string]any{"value": v}
		}
		props["outputs"] = outs
	}
	if d.errMsg != "" {
		props["error"] = map[string]any{"code": "DeploymentFailed", "message": d.errMsg}
	}
	return map[string]any{
		"id":         "/subscriptions/" + s.opts.Subscription + "/resourceGroups/" + s.opts.ResourceGroup + "/providers/Microsoft.Resources/deployments/" + d.name,
		"name":       d.name,
		"properties": props,
	}
}

func (s *Server) advanceDeploymentLocked(d *deployment) {
	if d.state != "Accepted" && d.state != "Running" {
		return
	}
	d.state = "Running"
	if s.stuck[d.name] {
		return
	}
	if d.polls > 0 {
		d.polls--
		return
	}
	if s.failing[d.name] {
		d.state, d.errMsg = "Failed", "the deployment failed (injected)"
		return
	}
	ctx := s.evalCtxLocked(d.template, d.params)
	for _, res := range d.template["resources"].([]any) {
		m, _ := res.(map[string]any)
		typ, _ := m["type"].(string)
		v, err := ctx.value(m)
		if err != nil {
			d.state, d.errMsg = "Failed", "InvalidTemplate: "+err.Error()
			return
		}
		ev, _ := v.(map[string]any)
		name, _ := ev["name"].(string)
		switch strings.ToLower(typ) {
		case "microsoft.compute/virtualmachines":
			props, _ := ev["properties"].(map[string]any)
			hw, _ := props["hardwareProfile"].(map[string]any)
			size, _ := hw["vmSize"].(string)
			loc, _ := ev["location"].(string)
			if vm, ok := s.vms[name]; ok {
				vm.Size, vm.Location = size, loc
			} else {
				s.vms[name] = &VM{Name: name, Location: loc, Size: size, Power: "running", Deployment: d.name}
			}
			s.others[strings.ToLower(typ+"/"+name)] = ev
		case "microsoft.network/virtualnetworks":
			s.vnets[name] = ev
		case "microsoft.network/publicipaddresses":
			// ARM computes the FQDN of a DNS label.
			props, _ := ev["properties"].(map[string]any)
			if dns, ok := props["dnsSettings"].(map[string]any); ok {
				if label, ok := dns["domainNameLabel"].(string); ok && label != "" {
					dns["fqdn"] = fmt.Sprintf("%s.%s.cloudapp.azure.com", label, ev["location"])
				}
			}
			s.others[strings.ToLower(typ+"/"+name)] = ev
		default:
			s.others[strings.ToLower(typ+"/"+name)] = ev
		}
	}
	outs, _ := d.template["outputs"].(map[string]any)
	d.outputs = map[string]any{}
	for k, v := range outs {
		if m, ok := v.(map[string]any); ok {
			out, err := ctx.value(m["value"])
			if err != nil {
				d.state, d.errMsg = "Failed", "InvalidTemplate: output '"+k+"': "+err.Error()
				return
			}
			d.outputs[k] = out
		}
	}
	d.state = "Succeeded"
}

// evalCtxLocked is the expression context of a deployment of tpl in the
// fake's resource group (see expr.go).
func (s *Server) evalCtxLocked(tpl map[string]any, params map[string]any) *evalCtx {
	declared, _ := tpl["parameters"].(map[string]any)
	vars, _ := tpl["variables"].(map[string]any)
	return &evalCtx{params: params, declared: declared, vars: vars,
		sub: s.opts.Subscription, rg: s.opts.ResourceGroup, loc: s.opts.Location, busy: map[string]bool{},
		lookup: s.resourceByIDLocked}
}

// resourceByIDLocked finds a resource of the fake's resource group by its
// ARM id.
func (s *Server) resourceByIDLocked(id string) (map[string]any, bool) {
	prefix := "/subscriptions/" + s.opts.Subscription + "/resourcegroups/" + s.opts.ResourceGroup + "/providers/"
	if len(id) <= len(prefix) || !strings.EqualFold(id[:len(prefix)], prefix) {
		return nil, false
	}
	parts := strings.Split(id[len(prefix):], "/")
	if len(parts) != 3 {
		return nil, false // nested resources are not kept
	}
	typ, name := parts[0]+"/"+parts[1], parts[2]
	switch strings.ToLower(typ) {
	case "microsoft.compute/virtualmachines":
		vm, ok := s.vms[name]
		if !ok {
			return nil, false
		}
		return map[string]any{"name": vm.Name, "location": vm.Location,
			"properties": map[string]any{"hardwareProfile": map[string]any{"vmSize": vm.Size}}}, true
	case "microsoft.network/virtualnetworks":
		v, ok := s.vnets[name]
		return v, ok
	}
	v, ok := s.others[strings.ToLower(typ+"/"+name)]
	return v, ok
}

// ---- virtual machines ----

func (s *Server) serveVMLocked(w http.ResponseWriter, r *http.Request, a armPath, body []byte) *apiError {
	vm, ok := s.vms[a.name]
	if !ok {
		return fail(http.StatusNotFound, "ResourceNotFound", "the Resource 'Microsoft.Compute/virtualMachines/%s' under resource group '%s' was not found", a.name, a.rg)
	}
	switch {
	case len(a.rest) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"name": vm.Name, "location": vm.Location,
			"properties": map[string]any{"provisioningState": "Succeeded", "hardwareProfile": map[string]any{"vmSize": vm.Size}}})
		return nil
	case len(a.rest) == 1 && a.rest[0] == "instanceView" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"statuses": []any{
			map[string]any{"code": "ProvisioningState/succeeded"},
			map[string]any{"code": "PowerState/" + vm.Power},
		}})
		return nil
	case len(a.rest) == 1 && r.Method == http.MethodPost:
		var target string
		switch a.rest[0] {
		case "start":
			target = "running"
		case "powerOff":
			target = "stopped"
		case "deallocate":
			target = "deallocated"
		case "restart":
			if vm.Power != "running" {
				return fail(http.StatusConflict, "OperationNotAllowed", "operation 'restart' is not allowed on VM '%s' since the VM is %s", vm.Name, vm.Power)
			}
			target = "running"
		default:
			return fail(http.StatusBadRequest, "UnsupportedOperation", "the fake serves no VM action %q", a.rest[0])
		}
		if a.rest[0] == "powerOff" && vm.Power == "deallocated" {
			target = "deallocated"
		}
		s.startOpLocked(w, http.StatusAccepted, vm.Name, nil, func() string {
			if !s.frozen[vm.Name] {
				vm.Power = target
			}
			return ""
		})
		return nil
	case len(a.rest) == 2 && strings.EqualFold(a.rest[0], "runCommands"):
		return s.serveRunCommandLocked(w, r, vm, a.rest[1], body)
	}
	return fail(http.StatusBadRequest, "UnsupportedOperation", "the fake serves no %s %s", r.Method, r.URL.Path)
}

func (s *Server) serveRunCommandLocked(w http.ResponseWriter, r *http.Request, vm *VM, name string, body []byte) *apiError {
	key := vm.Name + "/" + name
	switch r.Method {
	case http.MethodGet:
		c, ok := s.runCmds[key]
		if !ok {
			return fail(http.StatusNotFound, "NotFound", "run command '%s' was not found", name)
		}
		state := c.state
		if s.stuck[vm.Name] {
			state = "Running"
		}
		props := map[string]any{"provisioningState": "Succeeded", "source": map[string]any{"script": c.Script}}
		if r.URL.Query().Get("$expand") == "instanceView" {
			iv := map[string]any{"executionState": state, "output": "", "error": ""}
			if state != "Running" && state != "Pending" {
				iv["exitCode"] = c.exitCode
				iv["output"], iv["error"] = c.out, c.err
				iv["startTime"] = c.start.UTC().Format(time.RFC3339Nano)
				iv["endTime"] = c.end.UTC().Format(time.RFC3339Nano)
			} else {
				iv["startTime"] = c.start.UTC().Format(time.RFC3339Nano)
			}
			props["instanceView"] = iv
		}
		if state == "Running" && s.opts.RetryAfter != "" {
			w.Header().Set("Retry-After", s.opts.RetryAfter)
		}
		writeJSON(w, http.StatusOK, map[string]any{"name": name, "location": vm.Location, "properties": props})
		return nil
	case http.MethodPut:
		var req struct {
			Location   string `json:"location"`
			Properties struct {
				Source struct {
					Script string `json:"script"`
				} `json:"source"`
				ProtectedParameters []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"protectedParameters"`
				TimeoutInSeconds int  `json:"timeoutInSeconds"`
				AsyncExecution   bool `json:"asyncExecution"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return fail(http.StatusBadRequest, "InvalidRequestContent", "the request content was invalid: %v", err)
		}
		if req.Location == "" {
			return fail(http.StatusBadRequest, "LocationRequired", "the location property is required for this definition")
		}
		if vm.Power != "running" {
			return fail(http.StatusConflict, "OperationNotAllowed", "cannot run a command on VM '%s': the VM is %s", vm.Name, vm.Power)
		}
		if old, ok := s.runCmds[key]; ok && old.state == "Running" {
			return fail(http.StatusConflict, "Conflict", "run command '%s' is still running", name)
		}
		status := http.StatusCreated
		if _, ok := s.runCmds[key]; ok {
			status = http.StatusOK
		}
		c := &RunCommand{VM: vm.Name, Name: name, Script: req.Properties.Source.Script, Params: map[string]string{},
			Timeout: req.Properties.TimeoutInSeconds, state: "Running", start: time.Now()}
		for _, p := range req.Properties.ProtectedParameters {
			c.Params[p.Name] = p.Value
		}
		s.runCmds[key] = c
		s.runLog = append(s.runLog, c)
		go s.execute(c)
		s.startOpLocked(w, status, vm.Name, map[string]any{"name": name, "location": req.Location,
			"properties": map[string]any{"provisioningState": "Creating", "source": map[string]any{"script": c.Script}}},
			func() string { return "" })
		return nil
	}
	return fail(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s is not allowed on a run command", r.Method)
}

// execute runs a Run Command's script with /bin/sh on this machine.
func (s *Server) execute(c *RunCommand) {
	s.mu.Lock()
	dir := s.scriptDir
	s.mu.Unlock()
	ctx := context.Background()
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(c.Timeout)*time.Second)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", c.Script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	for k, v := range c.Params {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	s.mu.Lock()
	defer s.mu.Unlock()
	c.out, c.err, c.end = out.String(), errb.String(), time.Now()
	switch {
	case ctx.Err() != nil:
		c.state, c.exitCode = "TimedOut", -1
	case err == nil:
		c.state = "Succeeded"
	default:
		c.state = "Failed"
		c.exitCode = 1
		if ee, ok := err.(*exec.ExitError); ok {
			c.exitCode = ee.ExitCode()
		}
	}
}

// ---- virtual networks ----

func (s *Server) serveVNetLocked(w http.ResponseWriter, r *http.Request, name string) *apiError {
	v, ok := s.vnets[name]
	switch r.Method {
	case http.MethodGet:
		if !ok {
			return fail(http.StatusNotFound, "ResourceNotFound", "the Resource 'Microsoft.Network/virtualNetworks/%s' was not found", name)
		}
		writeJSON(w, http.StatusOK, v)
		return nil
	case http.MethodDelete:
		if !ok {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		s.startOpLocked(w, http.StatusAccepted, name, nil, func() string {
			delete(s.vnets, name)
			return ""
		})
		return nil
	}
	return fail(http.StatusMethodNotAllowed, "MethodNotAllowed", "%s is not allowed on a virtual network", r.Method)
}

// ---- database servers ----

const configPage = 20

func pendingJSON(provider string, pending bool) any {
	if strings.EqualFold(provider, "Microsoft.DBforPostgreSQL") {
		return pending
	}
	if pending {
		return "True"
	}
	return "False"
}

func (s *Server) configJSON(srv *DBServer, name string) map[string]any {
	c := srv.Configs[name]
	return map[string]any{"name": name, "type": srv.Provider + "/" + srv.Kind + "/configurations",
		"properties": map[string]any{"value": c.Value, "defaultValue": c.Default, "isConfigPendingRestart": pendingJSON(srv.Provider, c.Pending),
			"source": "user-override"}}
}

func (s *Server) serveDBLocked(w http.ResponseWriter, r *http.Request, a armPath, body []byte) *apiError {
	srv, ok := s.servers[strings.ToLower(a.provider+"/"+a.typ+"/"+a.name)]
	if !ok {
		return fail(http.StatusNotFound, "ResourceNotFound", "the Resource '%s/%s/%s' under resource group '%s' was not found", a.provider, a.typ, a.name, a.rg)
	}
	set := func(name, value string) *apiError {
		c, ok := srv.Configs[name]
		if !ok {
			return fail(http.StatusNotFound, "ConfigurationNotExists", "the configuration '%s' does not exist for server '%s'", name, srv.Name)
		}
		if len(c.Allowed) > 0 && !contains(c.Allowed, value) {
			return fail(http.StatusBadRequest, "InvalidConfigurationValue", "the value '%s' for configuration '%s' is not valid", value, name)
		}
		return nil
	}
	apply := func(name, value string) {
		c := srv.Configs[name]
		if c.Value != value && c.Static {
			c.Pending = true
		}
		c.Value = value
	}
	switch {
	case len(a.rest) == 1 && a.rest[0] == "configurations" && r.Method == http.MethodGet:
		names := make([]string, 0, len(srv.Configs))
		for k := range srv.Configs {
			names = append(names, k)
		}
		sort.Strings(names)
		skip, _ := strconv.Atoi(r.URL.Query().Get("$skipToken"))
		var vals []any
		for i := skip; i < len(names) && i < skip+configPage; i++ {
			vals = append(vals, s.configJSON(srv, names[i]))
		}
		out := map[string]any{"value": vals}
		if skip+configPage < len(names) {
			q := r.URL.Query()
			q.Set("$skipToken", strconv.Itoa(skip+configPage))
			out["nextLink"] = s.URL() + r.URL.Path + "?" + q.Encode()
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	case len(a.rest) == 2 && a.rest[0] == "configurations" && r.Method == http.MethodGet:
		if _, ok := srv.Configs[a.rest[1]]; !ok {
			return fail(http.StatusNotFound, "ConfigurationNotExists", "the configuration '%s' does not exist", a.rest[1])
		}
		writeJSON(w, http.StatusOK, s.configJSON(srv, a.rest[1]))
		return nil
	case len(a.rest) == 2 && a.rest[0] == "configurations" && r.Method == http.MethodPut:
		var req struct {
			Properties struct {
				Value *string `json:"value"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Properties.Value == nil {
			return fail(http.StatusBadRequest, "InvalidRequestContent", "properties.value (a string) is required")
		}
		name, value := a.rest[1], *req.Properties.Value
		if e := set(name, value); e != nil {
			return e
		}
		srv.Updates++
		if s.opts.ConfigurationsAt200 {
			apply(name, value)
			writeJSON(w, http.StatusOK, s.configJSON(srv, name))
			return nil
		}
		s.startOpLocked(w, http.StatusAccepted, srv.Name, nil, func() string {
			apply(name, value)
			return ""
		})
		return nil
	case len(a.rest) == 1 && a.rest[0] == "updateConfigurations" && r.Method == http.MethodPost:
		if srv.Kind != "flexibleServers" || !strings.EqualFold(srv.Provider, "Microsoft.DBforMySQL") {
			return fail(http.StatusBadRequest, "UnsupportedOperation", "batch update is supported by MySQL flexible servers only")
		}
		var req struct {
			Value []struct {
				Name       string `json:"name"`
				Properties struct {
					Value *string `json:"value"`
				} `json:"properties"`
			} `json:"value"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return fail(http.StatusBadRequest, "InvalidRequestContent", "the request content was invalid: %v", err)
		}
		for _, v := range req.Value {
			if v.Properties.Value == nil {
				return fail(http.StatusBadRequest, "InvalidRequestContent", "properties.value of %s is required", v.Name)
			}
			if e := set(v.Name, *v.Properties.Value); e != nil {
				return e
			}
		}
		srv.Updates++
		if s.opts.ConfigurationsAt200 {
			var vals []any
			for _, v := range req.Value {
				apply(v.Name, *v.Properties.Value)
				vals = append(vals, s.configJSON(srv, v.Name))
			}
			writeJSON(w, http.StatusOK, map[string]any{"value": vals})
			return nil
		}
		s.startOpLocked(w, http.StatusAccepted, srv.Name, nil, func() string {
			for _, v := range req.Value {
				apply(v.Name, *v.Properties.Value)
			}
			return ""
		})
		return nil
	case len(a.rest) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"name": srv.Name, "type": srv.Provider + "/" + srv.Kind,
			"properties": map[string]any{"state": srv.State, "userVisibleState": srv.State}})
		return nil
	case len(a.rest) == 1 && a.rest[0] == "configurations" && r.Method == http.MethodPut:
		// mlos_bench's check for a pending restart PUTs to the list of
		// configurations; Azure's API has no such operation.
		return fail(http.StatusMethodNotAllowed, "MethodNotAllowed", "the requested resource does not support http method 'PUT'")
	case len(a.rest) == 1 && (a.rest[0] == "start" || a.rest[0] == "stop") && r.Method == http.MethodPost:
		action := a.rest[0]
		s.startOpLocked(w, http.StatusAccepted, srv.Name, nil, func() string {
			if action == "start" {
				srv.State = "Ready"
				srv.Starts++
			} else {
				srv.State = "Stopped"
			}
			return ""
		})
		return nil
	case len(a.rest) == 1 && a.rest[0] == "restart" && r.Method == http.MethodPost:
		if srv.State != "Ready" {
			return fail(http.StatusConflict, "ServerNotReady", "server '%s' is %s and cannot be restarted", srv.Name, srv.State)
		}
		s.startOpLocked(w, http.StatusAccepted, srv.Name, nil, func() string {
			srv.Restarts++
			for _, c := range srv.Configs {
				c.Pending = false
			}
			return ""
		})
		return nil
	}
	return fail(http.StatusBadRequest, "UnsupportedOperation", "the fake serves no %s %s", r.Method, r.URL.Path)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
