package awsapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go"
)

const secret = "bench-test-secret-key"

func testClient(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: secret}, nil
		}),
		// Fast retries, so the retry test does not wait for backoff.
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			})
		},
	}
	c, err := New(t.Context(), cfg, "EC2", "ec2", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestQuery(t *testing.T) {
	var got url.Values
	var auth string
	c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got, _ = url.ParseQuery(string(b))
		auth = r.Header.Get("Authorization")
		_, _ = io.WriteString(w, `<DescribeThingsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><itemSet><item><id>a</id></item><item><id>b</id></item></itemSet></DescribeThingsResponse>`)
	}))
	var out struct {
		IDs []string `xml:"itemSet>item>id"`
	}
	if err := c.Query(t.Context(), "DescribeThings", "2016-11-15", url.Values{"Filter.1.Name": {"x y"}}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out.IDs, ",") != "a,b" {
		t.Errorf("decoded %v", out.IDs)
	}
	if got.Get("Action") != "DescribeThings" || got.Get("Version") != "2016-11-15" || got.Get("Filter.1.Name") != "x y" {
		t.Errorf("form = %v", got)
	}
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKIDTEST/") || !strings.Contains(auth, "/us-east-1/ec2/aws4_request") || strings.Contains(auth, secret) {
		t.Errorf("Authorization = %q", auth)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name, ctype, body string
		status            int
		json              bool
		want              APIError
	}{
		{"EC2 XML", "text/xml", `<?xml version="1.0"?><Response><Errors><Error><Code>InvalidInstanceID.NotFound</Code><Message>The instance ID 'i-1' does not exist</Message></Error></Errors><RequestID>req-9</RequestID></Response>`, 400, false,
			APIError{Service: "EC2", Operation: "Op", StatusCode: 400, RequestID: "req-9", Code: "InvalidInstanceID.NotFound", Message: "The instance ID 'i-1' does not exist"}},
		{"JSON", "application/x-amz-json-1.1", `{"__type":"com.amazonaws.ssm#InvocationDoesNotExist","message":"not yet"}`, 400, true,
			APIError{Service: "EC2", Operation: "Op", StatusCode: 400, RequestID: "hdr-1", Code: "InvocationDoesNotExist", Message: "not yet"}},
		{"not XML", "text/html", `<html>denied`, 403, false,
			APIError{Service: "EC2", Operation: "Op", StatusCode: 403, RequestID: "hdr-1", Code: "Forbidden", Message: "<html>denied"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.Header().Set("X-Amzn-RequestId", "hdr-1")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			var err error
			if tc.json {
				err = c.JSON(t.Context(), "AmazonSSM.Op", map[string]string{}, nil)
			} else {
				err = c.Query(t.Context(), "Op", "v", nil, nil)
			}
			var ae *APIError
			if !errors.As(err, &ae) || *ae != tc.want {
				t.Fatalf("error = %#v, want %#v", err, tc.want)
			}
			var sa smithy.APIError
			if !errors.As(err, &sa) || sa.ErrorCode() != tc.want.Code || sa.ErrorFault() != smithy.FaultClient {
				t.Errorf("as smithy.APIError: %v", sa)
			}
			if !strings.Contains(err.Error(), "api error "+tc.want.Code+": "+tc.want.Message) {
				t.Errorf("Error() = %q", err.Error())
			}
		})
	}
}

func TestRetries(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	c := testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `<Response><Errors><Error><Code>Unavailable</Code><Message>try again</Message></Error></Errors></Response>`)
			return
		}
		if n == 2 {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>slow down</Message></Error></Errors></Response>`)
			return
		}
		_, _ = io.WriteString(w, `<OkResponse/>`)
	}))
	if err := c.Query(t.Context(), "Op", "v", nil, nil); err != nil {
		t.Fatal(err)
	}
	if calls != 3 {
		t.Errorf("%d calls, want 3 (a 503 and a throttle retried)", calls)
	}

	// A client error is not retried.
	calls = 0
	c = testClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `<Response><Errors><Error><Code>InvalidParameterValue</Code><Message>no</Message></Error></Errors></Response>`)
	}))
	if err := c.Query(t.Context(), "Op", "v", nil, nil); err == nil || calls != 1 {
		t.Errorf("error %v after %d calls, want one call", err, calls)
	}
}

func TestEndpoint(t *testing.T) {
	for region, want := range map[string]string{
		"us-east-1":      "https://ec2.us-east-1.amazonaws.com",
		"cn-north-1":     "https://ec2.cn-north-1.amazonaws.com.cn",
		"us-iso-east-1":  "https://ec2.us-iso-east-1.c2s.ic.gov",
		"us-isob-east-1": "https://ec2.us-isob-east-1.sc2s.sgov.gov",
	} {
		got, err := resolveEndpoint(t.Context(), aws.Config{Region: region}, "EC2", "ec2", "")
		if err != nil || got != want {
			t.Errorf("%s: %q, %v, want %q", region, got, err, want)
		}
	}
	base := "http://127.0.0.1:5000"
	if got, _ := resolveEndpoint(t.Context(), aws.Config{Region: "us-east-1", BaseEndpoint: &base}, "EC2", "ec2", ""); got != base {
		t.Errorf("BaseEndpoint: %q", got)
	}
	if got, _ := resolveEndpoint(t.Context(), aws.Config{Region: "us-east-1", BaseEndpoint: &base}, "EC2", "ec2", "http://x"); got != "http://x" {
		t.Errorf("override: %q", got)
	}
}

// The SDK's config chain's endpoint settings reach the client as they
// reach the SDK's own clients.
func TestEndpointFromConfigChain(t *testing.T) {
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_ENDPOINT_URL", "http://all.example")
	t.Setenv("AWS_ENDPOINT_URL_EC2", "http://ec2.example")
	cfg, err := config.LoadDefaultConfig(t.Context(), config.WithRegion("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"EC2": "http://ec2.example", "SSM": "http://all.example"} {
		c, err := New(t.Context(), cfg, name, strings.ToLower(name), "")
		if err != nil || c.Endpoint() != want {
			t.Errorf("%s: %v, %v, want %s", name, c, err, want)
		}
	}
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	cfg, _ = config.LoadDefaultConfig(t.Context(), config.WithRegion("eu-west-1"))
	if c, _ := New(t.Context(), cfg, "EC2", "ec2", ""); c.Endpoint() != "https://ec2.eu-west-1.amazonaws.com" {
		t.Errorf("ignoring configured endpoints: %s", c.Endpoint())
	}
}
