// Package aws implements bench services on Amazon Web Services:
//
//   - S3FileShareService: a FileShare on an S3 bucket (or any S3-compatible
//     store), using the SDK's transfer manager for large files;
//   - AwsEc2Service: EC2 instances as hosts (HostProvisioning, HostOps,
//     OSOps);
//   - AwsSsmService: scripts run on EC2 instances with SSM Run Command
//     (RemoteExec).
//
// EC2 and SSM are called directly (internal/awsapi: their wire protocols,
// signed with the SDK's Signature V4 signer), not through the SDK's
// generated service packages, which are heavy to compile for the few
// calls bench makes. Errors keep AWS's error code and message.
//
// Credentials always come from the standard AWS chain (environment
// variables, the shared config and credentials files with an optional
// profile, SSO, web identity, container and instance metadata). bench
// never reads them itself, and never logs them or puts them into errors.
package aws

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go"

	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// CommonConfig holds the settings every AWS service class shares.
type CommonConfig struct {
	// Region is the AWS region (e.g. "us-east-1"); "" takes the region
	// from the standard chain (AWS_REGION, the profile's region).
	Region string `json:"region"`
	// Endpoint overrides the service endpoint URL, for S3-compatible
	// stores, VPC endpoints and local emulators such as moto.
	Endpoint string `json:"endpoint"`
	// Profile selects a profile of the shared config and credentials
	// files; "" uses AWS_PROFILE or the default profile.
	Profile string `json:"profile"`
}

func (c CommonConfig) validate() error {
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config key \"endpoint\": %q is not an http:// or https:// URL", c.Endpoint)
		}
	}
	return nil
}

// endpointPtr returns the endpoint for a client's BaseEndpoint option.
func (c CommonConfig) endpointPtr() *string {
	if c.Endpoint == "" {
		return nil
	}
	return aws.String(c.Endpoint)
}

// loadAWSConfig resolves region and credentials through the standard AWS
// chain. Credentials are resolved lazily, on the first request.
func loadAWSConfig(ctx context.Context, c CommonConfig) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// The SDK's errors name files and profiles, never secrets.
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: set config key \"region\", AWS_REGION, or a region in the AWS profile")
	}
	return cfg, nil
}

// apiErrorCode returns the AWS error code of err ("" if none).
func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// poller waits for a condition with a fixed interval and an upper bound.
type poller struct {
	interval time.Duration
	timeout  time.Duration
}

// wait calls check until it reports done or fails. It returns an error
// wrapping services.ErrTimeout once p.timeout has passed, and the context's
// error (wrapped) when ctx ends first.
func (p poller) wait(ctx context.Context, what string, check func(ctx context.Context) (bool, error)) error {
	deadline := time.Now().Add(p.timeout)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("waiting for %s: %w", what, errors.Join(services.ErrTimeout, ctx.Err()))
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
		done, err := check(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) && !errors.Is(err, services.ErrTimeout) {
				// The deadline came while a request was in flight: still
				// the wait's time limit, not an AWS error.
				return fmt.Errorf("waiting for %s: %w", what, errors.Join(services.ErrTimeout, err, context.DeadlineExceeded))
			}
			return err
		}
		if done {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("waited %s for %s: %w", p.timeout, what, services.ErrTimeout)
		}
		t.Reset(min(p.interval, left))
	}
}

// durationOr returns d, or def when d is unset.
func durationOr(d *decode.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Std()
}

// paramString returns params[key] as a string ("" when absent or empty).
// Numbers are formatted; other types are an error naming the key.
func paramString(params services.Params, key string) (string, error) {
	v, ok := params[key]
	if !ok || v == nil {
		return "", nil
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x), nil
	case int64, int, float64, bool:
		return fmt.Sprint(x), nil
	default:
		return "", fmt.Errorf("parameter %q must be a string, got %T", key, v)
	}
}
