// Package awsapi calls AWS service APIs directly, as services/azure calls
// ARM's REST API on azcore: a request in the service's wire protocol
// (Query for EC2, JSON 1.1 for SSM), signed with the SDK's Signature
// Version 4 signer, with the region, credentials (the standard chain),
// HTTP client and retry settings that the SDK's config package resolved.
//
// It exists to keep the build light: the SDK's generated service packages
// for EC2 and SSM cover hundreds of operations (service/ec2 alone was a
// third of bench's compile time), and bench calls a handful of them.
//
// Errors keep AWS's error code, message and request id (*APIError, which
// also satisfies smithy.APIError), and never contain credentials.
package awsapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// maxResponse bounds a response body read into memory.
const maxResponse = 64 << 20

// Client calls one AWS service.
type Client struct {
	// Name is the service's name in errors ("EC2", "SSM"), also its SDK
	// id for service-specific endpoint settings (AWS_ENDPOINT_URL_EC2).
	name     string
	signing  string // signing name and endpoint prefix: "ec2", "ssm"
	endpoint string
	region   string
	creds    aws.CredentialsProvider
	http     aws.HTTPClient
	retryer  aws.Retryer
	signer   *v4.Signer
}

// New returns a client of the service whose SDK id is name (e.g. "EC2")
// and whose endpoint prefix and signing name is signing (e.g. "ec2").
// endpoint overrides the endpoint; "" resolves it as the SDK does from
// AWS_ENDPOINT_URL_<NAME>, AWS_ENDPOINT_URL, the profile's endpoint_url,
// or else https://<signing>.<region>.amazonaws.com (.com.cn in China, a
// -fips host when FIPS endpoints are asked for).
func New(ctx context.Context, cfg aws.Config, name, signing, endpoint string) (*Client, error) {
	c := &Client{name: name, signing: signing, region: cfg.Region, creds: cfg.Credentials, http: cfg.HTTPClient, signer: v4.NewSigner()}
	if c.region == "" {
		return nil, errors.New("no AWS region")
	}
	if c.http == nil {
		c.http = awshttp.NewBuildableClient()
	}
	switch {
	case cfg.Retryer != nil:
		c.retryer = cfg.Retryer()
	case cfg.RetryMode == aws.RetryModeAdaptive:
		c.retryer = retry.NewAdaptiveMode()
	default:
		c.retryer = retry.NewStandard()
	}
	if cfg.Retryer == nil && cfg.RetryMaxAttempts > 0 {
		c.retryer = retry.AddWithMaxAttempts(c.retryer, cfg.RetryMaxAttempts)
	}
	ep, err := resolveEndpoint(ctx, cfg, name, signing, endpoint)
	if err != nil {
		return nil, err
	}
	c.endpoint = ep
	return c, nil
}

// Endpoint returns the URL requests go to.
func (c *Client) Endpoint() string { return c.endpoint }

func resolveEndpoint(ctx context.Context, cfg aws.Config, name, signing, override string) (string, error) {
	if override != "" {
		return override, nil
	}
	ignore := false
	for _, src := range cfg.ConfigSources {
		if g, ok := src.(interface {
			GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error)
		}); ok {
			if v, found, err := g.GetIgnoreConfiguredEndpoints(ctx); err == nil && found {
				ignore = v
				break
			}
		}
	}
	if !ignore {
		for _, src := range cfg.ConfigSources {
			if g, ok := src.(interface {
				GetServiceBaseEndpoint(context.Context, string) (string, bool, error)
			}); ok {
				if v, found, err := g.GetServiceBaseEndpoint(ctx, name); err == nil && found && v != "" {
					return v, nil
				}
			}
		}
		if cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != "" {
			return *cfg.BaseEndpoint, nil
		}
	}
	fips := false
	for _, src := range cfg.ConfigSources {
		if g, ok := src.(interface {
			GetUseFIPSEndpoint(context.Context) (aws.FIPSEndpointState, bool, error)
		}); ok {
			if v, found, err := g.GetUseFIPSEndpoint(ctx); err == nil && found {
				fips = v == aws.FIPSEndpointStateEnabled
				break
			}
		}
	}
	r := cfg.Region
	dns := "amazonaws.com"
	switch {
	case strings.HasPrefix(r, "cn-"):
		dns = "amazonaws.com.cn"
	case strings.HasPrefix(r, "us-isob-"):
		dns = "sc2s.sgov.gov"
	case strings.HasPrefix(r, "us-iso-"):
		dns = "c2s.ic.gov"
	}
	host := signing
	if fips {
		host += "-fips"
	}
	return fmt.Sprintf("https://%s.%s.%s", host, r, dns), nil
}

// APIError is an error answer of an AWS API.
type APIError struct {
	Service, Operation string
	StatusCode         int
	RequestID          string
	Code, Message      string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: HTTP %d", e.Service, e.Operation, e.StatusCode)
	if e.RequestID != "" {
		fmt.Fprintf(&b, ", request id %s", e.RequestID)
	}
	fmt.Fprintf(&b, ", api error %s: %s", e.Code, e.Message)
	return b.String()
}

// ErrorCode is AWS's error code (e.g. "InvalidInstanceID.NotFound").
func (e *APIError) ErrorCode() string { return e.Code }

// ErrorMessage is AWS's message.
func (e *APIError) ErrorMessage() string { return e.Message }

// ErrorFault says whose fault the error is.
func (e *APIError) ErrorFault() smithy.ErrorFault {
	switch {
	case e.StatusCode >= 500:
		return smithy.FaultServer
	case e.StatusCode >= 400:
		return smithy.FaultClient
	}
	return smithy.FaultUnknown
}

// HTTPStatusCode lets the SDK's retryer see the status.
func (e *APIError) HTTPStatusCode() int { return e.StatusCode }

var _ smithy.APIError = (*APIError)(nil)

// Query calls an operation of a Query-protocol API (EC2): params are the
// request's form fields, besides Action and Version; the XML response is
// decoded into out (nil: ignored).
func (c *Client) Query(ctx context.Context, action, version string, params url.Values, out any) error {
	form := url.Values{}
	for k, v := range params {
		form[k] = v
	}
	form.Set("Action", action)
	form.Set("Version", version)
	body := []byte(form.Encode())
	hdr := http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}
	return c.do(ctx, action, body, hdr, func(b []byte) error {
		if out == nil {
			return nil
		}
		return xml.Unmarshal(b, out)
	}, queryError)
}

// JSON calls an operation of a JSON 1.1 API (SSM): target is the
// X-Amz-Target (e.g. "AmazonSSM.SendCommand"); in is encoded as the
// request, the response decoded into out (nil: ignored).
func (c *Client) JSON(ctx context.Context, target string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	op := target[strings.LastIndexByte(target, '.')+1:]
	hdr := http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amz-Target": {target}}
	return c.do(ctx, op, body, hdr, func(b []byte) error {
		if out == nil || len(bytes.TrimSpace(b)) == 0 {
			return nil
		}
		return json.Unmarshal(b, out)
	}, jsonError)
}

// do sends the request, retrying as the retryer allows.
func (c *Client) do(ctx context.Context, op string, body []byte, hdr http.Header,
	decode func([]byte) error, parseErr func(http.Header, []byte) (code, msg, reqID string)) error {
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	release := c.retryer.GetInitialToken()
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, op, body, hash, hdr, decode, parseErr)
		if err == nil {
			_ = release(nil)
			return nil
		}
		if ctx.Err() != nil || !c.retryer.IsErrorRetryable(err) || (c.retryer.MaxAttempts() > 0 && attempt >= c.retryer.MaxAttempts()) {
			return err
		}
		rel, terr := c.retryer.GetRetryToken(ctx, err)
		if terr != nil {
			return err
		}
		release = rel
		delay, derr := c.retryer.RetryDelay(attempt, err)
		if derr != nil {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

func (c *Client) attempt(ctx context.Context, op string, body []byte, hash string, hdr http.Header,
	decode func([]byte) error, parseErr func(http.Header, []byte) (code, msg, reqID string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.name, op, err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "bench (aws-sdk-go-v2 signer)")
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		// The SDK's errors name the providers tried, never a secret.
		return fmt.Errorf("%s %s: retrieving AWS credentials: %w", c.name, op, err)
	}
	if err := c.signer.SignHTTP(ctx, creds, req, hash, c.signing, c.region, time.Now().UTC()); err != nil {
		return fmt.Errorf("%s %s: signing the request: %w", c.name, op, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", c.name, op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return fmt.Errorf("%s %s: reading the response: %w", c.name, op, err)
	}
	if resp.StatusCode >= 300 {
		code, msg, id := parseErr(resp.Header, b)
		if id == "" {
			id = firstHeader(resp.Header, "X-Amzn-Requestid", "X-Amz-Request-Id")
		}
		if code == "" {
			code = strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "")
			if msg == "" {
				msg = strings.TrimSpace(string(b[:min(len(b), 200)]))
			}
		}
		return &APIError{Service: c.name, Operation: op, StatusCode: resp.StatusCode, RequestID: id, Code: code, Message: msg}
	}
	if err := decode(b); err != nil {
		return fmt.Errorf("%s %s: decoding the response: %w", c.name, op, err)
	}
	return nil
}

func firstHeader(h http.Header, keys ...string) string {
	for _, k := range keys {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// queryError reads EC2's <Response><Errors><Error> and the other Query
// APIs' <ErrorResponse><Error>.
func queryError(_ http.Header, b []byte) (code, msg, reqID string) {
	var e struct {
		Errors    []queryErr `xml:"Errors>Error"`
		Error     queryErr   `xml:"Error"`
		RequestID string     `xml:"RequestID"`
		RequestId string     `xml:"RequestId"`
	}
	if xml.Unmarshal(b, &e) != nil {
		return "", "", ""
	}
	q := e.Error
	if len(e.Errors) > 0 {
		q = e.Errors[0]
	}
	return q.Code, q.Message, e.RequestID + e.RequestId
}

type queryErr struct {
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// jsonError reads a JSON 1.1 error: {"__type": "ns#Code", "message": ...}.
func jsonError(h http.Header, b []byte) (code, msg, reqID string) {
	var e struct {
		Type     string `json:"__type"`
		Code     string `json:"code"`
		Message  string `json:"message"`
		Message2 string `json:"Message"`
	}
	_ = json.Unmarshal(b, &e)
	code = firstNonEmpty(h.Get("X-Amzn-Errortype"), e.Code, e.Type)
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	return code, firstNonEmpty(e.Message, e.Message2), ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
