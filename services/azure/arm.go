package azure

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/benchtune/bench/configs"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// Test-only environment variables. They point bench's Azure services at a
// fake of the Azure REST API (internal/armfake) and are not meant for real
// use: BENCH_AZURE_TEST_ENDPOINT replaces https://management.azure.com and
// the Key Vault URLs (then https://ENDPOINT/keyvault/VAULT), and
// BENCH_AZURE_TEST_CA_FILE adds a PEM certificate to the trusted roots
// (TLS is always verified). Entra ID's host is azidentity's own
// AZURE_AUTHORITY_HOST.
const (
	EnvTestEndpoint = "BENCH_AZURE_TEST_ENDPOINT"
	EnvTestCAFile   = "BENCH_AZURE_TEST_CA_FILE"
)

const (
	armEndpoint = "https://management.azure.com"
	armScope    = "https://management.azure.com/.default"

	apiDeployments = "2022-05-01"
	apiCompute     = "2022-03-01"
	apiRunCommand  = "2024-07-01"
	apiNetwork     = "2023-05-01"
)

// mlos_bench's defaults for the request and polling settings.
const (
	defaultPollInterval   = 4 * time.Second
	defaultPollTimeout    = 300 * time.Second
	defaultRequestTimeout = 5 * time.Second
	defaultTotalRetries   = 10
	defaultBackoffFactor  = 300 * time.Millisecond
)

// testMode reports whether the test-only endpoint is set.
func testMode() bool { return os.Getenv(EnvTestEndpoint) != "" }

// armBase is the ARM endpoint.
func armBase() string {
	if ep := os.Getenv(EnvTestEndpoint); ep != "" {
		return strings.TrimRight(ep, "/")
	}
	return armEndpoint
}

// httpTransport is the HTTP client of the Azure services: the default
// one, or (tests) one that also trusts BENCH_AZURE_TEST_CA_FILE.
func httpTransport() (policy.Transporter, error) {
	ca := os.Getenv(EnvTestCAFile)
	if ca == "" {
		return nil, nil
	}
	pemData, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvTestCAFile, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, fmt.Errorf("%s: %s holds no PEM certificate", EnvTestCAFile, ca)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}

// requestConfig are mlos_bench's request and polling keys, common to the
// Azure services.
type requestConfig struct {
	PollInterval         *float64 `json:"pollInterval"`
	PollTimeout          *float64 `json:"pollTimeout"`
	RequestTimeout       *float64 `json:"requestTimeout"`
	RequestTotalRetries  *int     `json:"requestTotalRetries"`
	RequestBackoffFactor *float64 `json:"requestBackoffFactor"`
}

// deploymentConfig is the config of the services that deploy ARM
// templates (AzureVMService, AzureNetworkService).
type deploymentConfig struct {
	requestConfig
	Subscription                 string         `json:"subscription"`
	ResourceGroup                string         `json:"resourceGroup"`
	DeploymentTemplatePath       *string        `json:"deploymentTemplatePath"`
	DeploymentTemplateParameters map[string]any `json:"deploymentTemplateParameters"`
}

// armClient sends ARM requests through azcore's pipeline (retries with
// backoff on 408, 429 with Retry-After, 500, 502, 503, 504; a per-try
// timeout) with a bearer token from the Auth service.
type armClient struct {
	pl           runtime.Pipeline
	base         string
	sub, rg      string
	pollInterval time.Duration
	pollTimeout  time.Duration
	class        string
}

func seconds(v *float64, def time.Duration, key string, min time.Duration) (time.Duration, error) {
	if v == nil {
		return def, nil
	}
	d, err := decode.Seconds(*v)
	if err != nil || d < min {
		return 0, &configError{key, fmt.Sprintf("must be a number of seconds >= %g", min.Seconds())}
	}
	return d, nil
}

func newARMClient(rc requestConfig, auth services.Auth, sub, rg, class string) (*armClient, error) {
	c := &armClient{base: armBase(), sub: sub, rg: rg, class: class}
	var err error
	if c.pollInterval, err = seconds(rc.PollInterval, defaultPollInterval, "pollInterval", 0); err != nil {
		return nil, err
	}
	if c.pollTimeout, err = seconds(rc.PollTimeout, defaultPollTimeout, "pollTimeout", time.Millisecond); err != nil {
		return nil, err
	}
	tryTimeout, err := seconds(rc.RequestTimeout, defaultRequestTimeout, "requestTimeout", time.Millisecond)
	if err != nil {
		return nil, err
	}
	backoff, err := seconds(rc.RequestBackoffFactor, defaultBackoffFactor, "requestBackoffFactor", 0)
	if err != nil {
		return nil, err
	}
	retries := defaultTotalRetries
	if rc.RequestTotalRetries != nil {
		if *rc.RequestTotalRetries < 0 {
			return nil, &configError{"requestTotalRetries", "must not be negative"}
		}
		retries = *rc.RequestTotalRetries
	}
	tr, err := httpTransport()
	if err != nil {
		return nil, err
	}
	opts := policy.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: int32(retries), TryTimeout: tryTimeout, RetryDelay: backoff,
			MaxRetryDelay: 60 * time.Second},
		PerRetryPolicies: []policy.Policy{bearerPolicy{auth: auth}},
	}
	if retries == 0 {
		opts.Retry.MaxRetries = -1
	}
	if backoff == 0 {
		opts.Retry.RetryDelay = time.Millisecond
	}
	if tr != nil {
		opts.Transport = tr
	}
	c.pl = runtime.NewPipeline("bench-azure", "v1", runtime.PipelineOptions{}, &opts)
	return c, nil
}

// bearerPolicy adds the Auth service's token, over HTTPS only.
type bearerPolicy struct{ auth services.Auth }

func (p bearerPolicy) Do(req *policy.Request) (*http.Response, error) {
	if req.Raw().URL.Scheme != "https" {
		return nil, nonRetriable{fmt.Errorf("refusing to send an Azure token over %s (HTTPS only): %s", req.Raw().URL.Scheme, req.Raw().URL.Host)}
	}
	tok, err := p.auth.AccessToken(req.Raw().Context())
	if err != nil {
		return nil, nonRetriable{err}
	}
	req.Raw().Header.Set("Authorization", "Bearer "+tok)
	return req.Next()
}

// nonRetriable marks an error azcore's retry policy must not retry.
type nonRetriable struct{ error }

func (nonRetriable) NonRetriable() {}

func (e nonRetriable) Unwrap() error { return e.error }

// rgPath is the resource group's path plus the given segments (escaped).
func (c *armClient) rgPath(segs ...string) string {
	var b strings.Builder
	b.WriteString("/subscriptions/" + url.PathEscape(c.sub) + "/resourceGroups/" + url.PathEscape(c.rg))
	for _, s := range segs {
		b.WriteString("/")
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// armError is a failed ARM call.
type armError struct {
	Method, Path string
	Status       int
	Code, Msg    string
}

func (e *armError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		msg += " " + e.Code
	}
	if e.Msg != "" {
		msg += ": " + e.Msg
	}
	return msg
}

// Unwrap maps 504 and 408 to services.ErrTimeout.
func (e *armError) Unwrap() error {
	if e.Status == http.StatusGatewayTimeout || e.Status == http.StatusRequestTimeout {
		return services.ErrTimeout
	}
	return nil
}

func errorFromBody(method, p string, status int, body []byte) *armError {
	e := &armError{Method: method, Path: p, Status: status}
	var doc struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) == nil {
		e.Code, e.Msg = doc.Error.Code, doc.Error.Message
	}
	if e.Msg == "" && e.Code == "" {
		s := strings.TrimSpace(string(body))
		if len(s) > 300 {
			s = s[:300] + "..."
		}
		e.Msg = s
	}
	return e
}

// response is a read response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) json(v any) error { return json.Unmarshal(r.body, v) }

// send sends one request (path and query relative to the ARM endpoint, or
// an absolute URL) and reads the response. Non-2xx statuses are returned
// as *armError unless listed in ok.
func (c *armClient) send(ctx context.Context, method, target string, body any, ok ...int) (*response, error) {
	u := target
	if strings.HasPrefix(target, "/") {
		u = c.base + target
	} else if !sameHost(u, c.base) {
		// An operation or next-page URL from a response: the token goes
		// to the ARM endpoint only.
		return nil, fmt.Errorf("%s %s: refusing to follow a URL on another host than %s", method, pathOnly(u), c.base)
	}
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return nil, err
	}
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		if err := req.SetBody(streamingNopCloser(data), "application/json"); err != nil {
			return nil, err
		}
	}
	resp, err := c.pl.Do(req)
	p := pathOnly(u)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", method, p, ctx.Err())
		}
		return nil, fmt.Errorf("%s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the response: %w", method, p, err)
	}
	r := &response{status: resp.StatusCode, header: resp.Header, body: data}
	if resp.StatusCode/100 == 2 {
		return r, nil
	}
	for _, s := range ok {
		if s == resp.StatusCode {
			return r, nil
		}
	}
	return r, errorFromBody(method, p, resp.StatusCode, data)
}

// sameHost reports whether two URLs have the same scheme and host.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Scheme == ub.Scheme && strings.EqualFold(ua.Host, ub.Host)
}

// pathOnly drops the scheme, host and query of a URL (for messages).
func pathOnly(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "(bad URL)"
	}
	return pu.Path
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func streamingNopCloser(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

// retryAfter reads a Retry-After header (seconds); ok is false without one.
func retryAfter(h http.Header) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseFloat(v, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// sleep waits d (at least a few milliseconds, so that a zero Retry-After
// does not spin) or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	d = max(d, 10*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// waitAsync waits for the long-running operation a 201/202 response
// started, by polling its Azure-AsyncOperation URL (else its Location)
// every Retry-After or pollInterval, until deadline.
func (c *armClient) waitAsync(ctx context.Context, r *response, what string, deadline time.Time) error {
	if r.status != http.StatusCreated && r.status != http.StatusAccepted {
		return nil
	}
	asyncURL, loc := r.header.Get("Azure-AsyncOperation"), ""
	if asyncURL == "" {
		loc = r.header.Get("Location")
		if loc == "" {
			if r.status == http.StatusAccepted {
				return fmt.Errorf("%s: accepted, but the response names no operation to follow", what)
			}
			return nil
		}
	}
	delay, has := retryAfter(r.header)
	if !has {
		delay = c.pollInterval
	}
	for {
		if time.Now().Add(delay).After(deadline) {
			return fmt.Errorf("%s: %w: the operation did not finish within pollTimeout (%s)", what, services.ErrTimeout, c.pollTimeout)
		}
		if err := sleep(ctx, delay); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if asyncURL != "" {
			pr, err := c.send(ctx, http.MethodGet, asyncURL, nil)
			if err != nil {
				return fmt.Errorf("%s: polling the operation: %w", what, err)
			}
			var st struct {
				Status string `json:"status"`
				Error  struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := pr.json(&st); err != nil {
				return fmt.Errorf("%s: polling the operation: %w", what, err)
			}
			switch st.Status {
			case "Succeeded":
				return nil
			case "Failed", "Canceled":
				return fmt.Errorf("%s: the operation %s: %s %s", what, strings.ToLower(st.Status), st.Error.Code, st.Error.Message)
			}
			delay = c.nextDelay(pr.header)
			continue
		}
		pr, err := c.send(ctx, http.MethodGet, loc, nil)
		if err != nil {
			return fmt.Errorf("%s: polling the operation: %w", what, err)
		}
		if pr.status != http.StatusAccepted {
			return nil
		}
		delay = c.nextDelay(pr.header)
	}
}

func (c *armClient) nextDelay(h http.Header) time.Duration {
	if d, ok := retryAfter(h); ok {
		return d
	}
	return c.pollInterval
}

// ---- ARM template deployments ----

// deployer deploys an ARM template, as mlos_bench's AzureDeploymentService.
type deployer struct {
	*armClient
	template     map[string]any // nil without deploymentTemplatePath
	templatePath string
	params       map[string]any // deploymentTemplateParameters, templated and merged with the globals
}

// newDeployer loads the template and templates its parameters.
func newDeployer(spec services.Spec, c deploymentConfig, class string) (*deployer, error) {
	if strings.TrimSpace(c.Subscription) == "" {
		return nil, &configError{"subscription", "the Azure subscription id is required"}
	}
	if strings.TrimSpace(c.ResourceGroup) == "" {
		return nil, &configError{"resourceGroup", "the resource group is required"}
	}
	auth, ok := services.Find[services.Auth](spec.Parent)
	if !ok {
		return nil, services.NeedsService(&configError{"", class + " needs an authentication service listed before it (e.g. services/remote/azure/service-auth.jsonc)"})
	}
	ac, err := newARMClient(c.requestConfig, auth, c.Subscription, c.ResourceGroup, class)
	if err != nil {
		return nil, err
	}
	d := &deployer{armClient: ac, params: map[string]any{}}
	if c.DeploymentTemplatePath == nil || *c.DeploymentTemplatePath == "" {
		return d, nil
	}
	loader, err := configs.NewLoader(nil, spec.SearchPath...)
	if err != nil {
		return nil, err
	}
	p := loader.Resolve(*c.DeploymentTemplatePath)
	doc, err := loader.ReadDoc(p)
	if err != nil {
		return nil, &configError{"deploymentTemplatePath", fmt.Sprintf("reading the ARM template: %v", err)}
	}
	tpl, err := configs.Object(doc)
	if err != nil {
		return nil, &configError{"deploymentTemplatePath", fmt.Sprintf("the ARM template: %v", err)}
	}
	if _, ok := tpl["resources"]; !ok {
		return nil, &configError{"deploymentTemplatePath", fmt.Sprintf("%s is not an ARM template (it has no \"resources\")", p)}
	}
	d.template, d.templatePath = tpl, p
	d.params = expandSelf(c.DeploymentTemplateParameters, spec.Globals)
	if err := configs.MergeParameters(d.params, spec.Globals, nil, ""); err != nil {
		return nil, err
	}
	return d, nil
}

// expandSelf templates "$name" references in the values of m with m's own
// values first, then the globals, until nothing changes (so chains such as
// "$vnetName-nsg", where vnetName is "$resourceGroup-vnet", resolve).
func expandSelf(m map[string]any, globals map[string]any) map[string]any {
	cur := maps.Clone(m)
	if cur == nil {
		cur = map[string]any{}
	}
	for range 5 {
		next := configs.ExpandValue(cur, configs.MapLookup(cur), configs.MapLookup(globals)).(map[string]any)
		if reflect.DeepEqual(next, cur) {
			break
		}
		cur = next
	}
	return cur
}

// paramString returns params[key] as text, else the deployment
// parameter's, else "".
func (d *deployer) paramString(params services.Params, key string) string {
	for _, m := range []map[string]any{params, d.params} {
		if v, ok := m[key]; ok && v != nil {
			if s := configs.PyStr(v); s != "" {
				return s
			}
		}
	}
	return ""
}

// deployment is the outcome of a deployment.
type deploymentResult struct {
	Name    string
	Outputs map[string]any
}

var pendingDeploymentStates = map[string]bool{"Accepted": true, "Creating": true, "Deleting": true, "Running": true, "Updating": true}

// deploy (re)deploys the template in Incremental mode under name and
// waits until the deployment succeeded. Re-running it is safe: ARM updates
// the resources in place. A deployment of that name still active (left by
// an interrupted run) is waited for, then deployed again.
func (d *deployer) deploy(ctx context.Context, params services.Params, name string) (deploymentResult, error) {
	if d.template == nil {
		return deploymentResult{}, fmt.Errorf("%s has no deploymentTemplatePath, so it cannot provision", d.class)
	}
	merged := maps.Clone(d.params)
	for k := range merged {
		if v, ok := params[k]; ok {
			merged[k] = v
		}
	}
	declared, _ := d.template["parameters"].(map[string]any)
	armParams := map[string]any{}
	for k, v := range merged {
		if _, ok := declared[k]; ok {
			armParams[k] = map[string]any{"value": v}
		}
	}
	body := map[string]any{"properties": map[string]any{"mode": "Incremental", "template": d.template, "parameters": armParams}}
	p := d.rgPath("providers", "Microsoft.Resources", "deployments", name) + "?api-version=" + apiDeployments
	deadline := time.Now().Add(d.pollTimeout)
	what := fmt.Sprintf("deployment %s", name)
	slog.Info("azure: deploying an ARM template", "deployment", name, "template", d.templatePath)
	for attempt := 0; ; attempt++ {
		_, err := d.send(ctx, http.MethodPut, p, body)
		var ae *armError
		if err != nil && errors.As(err, &ae) && ae.Code == "DeploymentActive" && attempt == 0 {
			slog.Info("azure: a deployment of that name is still active; waiting for it first", "deployment", name)
			if _, werr := d.waitDeployment(ctx, p, what, deadline); werr != nil && errors.Is(werr, services.ErrTimeout) {
				return deploymentResult{}, werr
			}
			continue
		}
		if err != nil {
			return deploymentResult{}, fmt.Errorf("%s: %w", what, err)
		}
		break
	}
	outputs, err := d.waitDeployment(ctx, p, what, deadline)
	if err != nil {
		return deploymentResult{}, err
	}
	return deploymentResult{Name: name, Outputs: outputs}, nil
}

// waitDeployment polls the deployment until it is no longer pending and
// returns its outputs (name -> value) on success.
func (d *deployer) waitDeployment(ctx context.Context, p, what string, deadline time.Time) (map[string]any, error) {
	for {
		r, err := d.send(ctx, http.MethodGet, p, nil, http.StatusNotFound)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if r.status == http.StatusOK {
			var doc struct {
				Properties struct {
					ProvisioningState string                    `json:"provisioningState"`
					Outputs           map[string]map[string]any `json:"outputs"`
					Error             struct {
						Code    string `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				} `json:"properties"`
			}
			if err := r.json(&doc); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			st := doc.Properties.ProvisioningState
			if st == "Succeeded" {
				out := map[string]any{}
				for k, v := range doc.Properties.Outputs {
					out[k] = v["value"]
				}
				return out, nil
			}
			if !pendingDeploymentStates[st] {
				return nil, fmt.Errorf("%s: provisioning state %s: %s %s", what, st, doc.Properties.Error.Code, doc.Properties.Error.Message)
			}
		}
		delay := d.nextDelay(r.header)
		if time.Now().Add(delay).After(deadline) {
			return nil, fmt.Errorf("%s: %w: not provisioned within pollTimeout (%s)", what, services.ErrTimeout, d.pollTimeout)
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
}

// fromConfigError turns a configError into an error at the config key.
func fromConfigError(spec services.Spec, err error) error {
	var ce *configError
	if errors.As(err, &ce) {
		ref := spec.Ref.Child("config")
		if ce.key != "" {
			ref = ref.Child(ce.key)
		}
		located := ref.Errorf("%s", ce.msg)
		if errors.Is(err, services.ErrNeedsService) {
			return services.NeedsService(located)
		}
		return located
	}
	return err
}
