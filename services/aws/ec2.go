package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchtune/bench/internal/awsapi"
	"github.com/benchtune/bench/internal/decode"
	"github.com/benchtune/bench/services"
)

// EC2 class names.
const (
	EC2ClassShort = "bench.services.AwsEc2Service"
	EC2ClassFull  = "bench.services.remote.aws.ec2_service.AwsEc2Service"
)

// Parameters the EC2 service reads and returns.
const (
	// ParamInstanceID is the instance's id (returned by ProvisionHost; read
	// by every operation and by AwsSsmService).
	ParamInstanceID = "aws_instance_id"
	// ParamInstanceName names the instance: the value of its name tag,
	// which makes provisioning idempotent. Overrides config instance_name.
	ParamInstanceName = "aws_instance_name"
	// ParamInstanceType overrides config instance_type (so that a tunable
	// can choose it).
	ParamInstanceType = "aws_instance_type"
	// ParamImageID overrides config image_id.
	ParamImageID = "aws_image_id"
	// ParamPublicIP, ParamPrivateIP and ParamPublicDNS are returned by
	// ProvisionHost when the instance has them.
	ParamPublicIP  = "aws_public_ip"
	ParamPrivateIP = "aws_private_ip"
	ParamPublicDNS = "aws_public_dns"
	// ParamSSHHostname is the address to reach the host at.
	ParamSSHHostname = "ssh_hostname"
)

// Defaults of the EC2 service's settings.
const (
	DefaultEC2PollInterval = 5 * time.Second
	DefaultEC2PollTimeout  = 10 * time.Minute
	DefaultNameTag         = "Name"
)

func init() {
	services.Register(newEC2FromSpec, EC2ClassShort, EC2ClassFull)
}

// EC2Config is the config of AwsEc2Service.
type EC2Config struct {
	CommonConfig
	// PollInterval is how often the state of an instance is checked while
	// waiting for it (default 5s).
	PollInterval *decode.Duration `json:"poll_interval"`
	// PollTimeout bounds each wait for an instance to reach a state
	// (default 10m); past it the operation fails with services.ErrTimeout.
	PollTimeout *decode.Duration `json:"poll_timeout"`

	// InstanceName is the value of the name tag that identifies the
	// instance, so that provisioning again finds it rather than launching
	// another one. The aws_instance_name parameter overrides it.
	InstanceName string `json:"instance_name"`
	// NameTag is the tag key that holds the instance name (default "Name").
	NameTag string `json:"name_tag"`

	// LaunchTemplateID or LaunchTemplateName (not both) select a launch
	// template; LaunchTemplateVersion picks its version ("$Default",
	// "$Latest" or a number; default "$Default"). The other launch
	// settings override the template's.
	LaunchTemplateID      string `json:"launch_template_id"`
	LaunchTemplateName    string `json:"launch_template_name"`
	LaunchTemplateVersion string `json:"launch_template_version"`
	// ImageID (AMI) and InstanceType describe the instance when no launch
	// template does (aws_image_id and aws_instance_type parameters
	// override them).
	ImageID      string `json:"image_id"`
	InstanceType string `json:"instance_type"`
	// SubnetID, SecurityGroupIDs, KeyName: network and SSH key pair.
	SubnetID         string   `json:"subnet_id"`
	SecurityGroupIDs []string `json:"security_group_ids"`
	KeyName          string   `json:"key_name"`
	// Tags are put on the instance and its volumes (with the name tag).
	Tags map[string]string `json:"tags"`
	// UserData is the instance's user data (plain text, e.g. a cloud-init
	// document; bench encodes it).
	UserData string `json:"user_data"`
	// IamInstanceProfile is an instance profile name or ARN.
	IamInstanceProfile string `json:"iam_instance_profile"`
	// UsePrivateAddress makes ssh_hostname the private address even when
	// the instance has a public one (for runners inside the VPC).
	UsePrivateAddress bool `json:"use_private_address"`
}

// EC2Service manages EC2 instances: it implements services.HostProvisioning,
// services.HostOps and services.OSOps. Every operation names its instance
// with the aws_instance_id parameter, or else by its name tag.
type EC2Service struct {
	client ec2Client
	cfg    EC2Config
	poll   poller
}

var (
	_ services.HostProvisioning = (*EC2Service)(nil)
	_ services.HostOps          = (*EC2Service)(nil)
	_ services.OSOps            = (*EC2Service)(nil)
)

func newEC2FromSpec(ctx context.Context, spec services.Spec) (any, error) {
	var c EC2Config
	if err := services.DecodeConfig(spec, &c); err != nil {
		return nil, err
	}
	cref := spec.Ref.Child("config")
	if err := c.CommonConfig.validate(); err != nil {
		return nil, cref.Child("endpoint").Errorf("%v", err)
	}
	if c.LaunchTemplateID != "" && c.LaunchTemplateName != "" {
		return nil, cref.Child("launch_template_name").Errorf("give launch_template_id or launch_template_name, not both")
	}
	if c.LaunchTemplateVersion != "" && c.LaunchTemplateID == "" && c.LaunchTemplateName == "" {
		return nil, cref.Child("launch_template_version").Errorf("launch_template_version needs launch_template_id or launch_template_name")
	}
	if c.PollInterval != nil && c.PollInterval.Std() <= 0 {
		return nil, cref.Child("poll_interval").Errorf("must be a positive duration")
	}
	if c.PollTimeout != nil && c.PollTimeout.Std() <= 0 {
		return nil, cref.Child("poll_timeout").Errorf("must be a positive duration")
	}
	for i, id := range c.SecurityGroupIDs {
		if strings.TrimSpace(id) == "" {
			return nil, cref.Child("security_group_ids").Index(i).Errorf("a security group id must not be empty")
		}
	}
	for k := range c.Tags {
		if k == "" || strings.HasPrefix(strings.ToLower(k), "aws:") {
			return nil, cref.Child("tags").Child(k).Errorf("tag keys must be non-empty and must not start with \"aws:\"")
		}
	}
	return NewEC2Service(ctx, c)
}

// NewEC2Service builds the service from a validated config. Credentials
// come from the standard AWS chain.
func NewEC2Service(ctx context.Context, c EC2Config) (*EC2Service, error) {
	awsCfg, err := loadAWSConfig(ctx, c.CommonConfig)
	if err != nil {
		return nil, err
	}
	if c.NameTag == "" {
		c.NameTag = DefaultNameTag
	}
	api, err := awsapi.New(ctx, awsCfg, "EC2", "ec2", c.Endpoint)
	if err != nil {
		return nil, err
	}
	return &EC2Service{
		client: ec2Client{api},
		cfg:    c,
		poll: poller{
			interval: durationOr(c.PollInterval, DefaultEC2PollInterval),
			timeout:  durationOr(c.PollTimeout, DefaultEC2PollTimeout),
		},
	}, nil
}

// instanceName returns the instance name from the params or the config.
func (s *EC2Service) instanceName(params services.Params) (string, error) {
	name, err := paramString(params, ParamInstanceName)
	if err != nil {
		return "", err
	}
	if name == "" {
		name = s.cfg.InstanceName
	}
	return name, nil
}

// liveStates are the states of an instance that still exists.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// describe returns the instance with this id (nil when it does not exist).
func (s *EC2Service) describe(ctx context.Context, id string) (*ec2Instance, error) {
	out, err := s.client.describeInstances(ctx, []string{id}, nil)
	if err != nil {
		if strings.HasPrefix(apiErrorCode(err), "InvalidInstanceID") {
			return nil, nil
		}
		return nil, fmt.Errorf("describing EC2 instance %s: %w", id, err)
	}
	for i := range out {
		if out[i].InstanceID == id {
			return &out[i], nil
		}
	}
	return nil, nil
}

// findByName returns the instance that is not terminated and carries the
// name tag (nil when there is none; an error when several do).
func (s *EC2Service) findByName(ctx context.Context, name string) (*ec2Instance, error) {
	found, err := s.client.describeInstances(ctx, nil, []ec2Filter{
		{Name: "tag:" + s.cfg.NameTag, Values: []string{name}},
		{Name: "instance-state-name", Values: liveStates},
	})
	if err != nil {
		return nil, fmt.Errorf("looking up EC2 instances tagged %s=%s: %w", s.cfg.NameTag, name, err)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	ids := make([]string, len(found))
	for i, in := range found {
		ids[i] = in.InstanceID
	}
	sort.Strings(ids)
	return nil, fmt.Errorf("several EC2 instances are tagged %s=%s (%s); bench cannot tell which one is its host: terminate the extra ones or set %s",
		s.cfg.NameTag, name, strings.Join(ids, ", "), ParamInstanceID)
}

// lookup returns the instance the params name: by aws_instance_id, else
// by the name tag. It returns nil (and no error) when that instance does
// not exist or is terminated, and an error when the params name none.
func (s *EC2Service) lookup(ctx context.Context, params services.Params) (*ec2Instance, error) {
	id, err := paramString(params, ParamInstanceID)
	if err != nil {
		return nil, err
	}
	if id != "" {
		in, err := s.describe(ctx, id)
		if err != nil || in == nil || !isLive(in) {
			return nil, err
		}
		return in, nil
	}
	name, err := s.instanceName(params)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("no EC2 instance named: set the %s parameter, or the %s parameter or config key instance_name", ParamInstanceID, ParamInstanceName)
	}
	return s.findByName(ctx, name)
}

// mustLookup is lookup for operations on an existing instance: a missing
// instance is an error.
func (s *EC2Service) mustLookup(ctx context.Context, params services.Params) (*ec2Instance, error) {
	in, err := s.lookup(ctx, params)
	if err != nil {
		return nil, err
	}
	if in == nil {
		id, _ := paramString(params, ParamInstanceID)
		name, _ := s.instanceName(params)
		return nil, fmt.Errorf("EC2 instance %s does not exist (or is terminated)", describeTarget(id, s.cfg.NameTag, name))
	}
	return in, nil
}

func describeTarget(id, tag, name string) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("tagged %s=%s", tag, name)
}

func stateOf(in *ec2Instance) string {
	if in == nil {
		return ""
	}
	return in.State.Name
}

func isLive(in *ec2Instance) bool {
	st := stateOf(in)
	for _, s := range liveStates {
		if st == s {
			return true
		}
	}
	return false
}

// waitState polls the instance until it is in state want. A state from
// which want cannot be reached is an error; so is running past the poll
// timeout (wraps services.ErrTimeout).
func (s *EC2Service) waitState(ctx context.Context, id, want string) (*ec2Instance, error) {
	var last *ec2Instance
	err := s.poll.wait(ctx, fmt.Sprintf("EC2 instance %s to be %s", id, want), func(ctx context.Context) (bool, error) {
		in, err := s.describe(ctx, id)
		if err != nil {
			return false, err
		}
		last = in
		st := stateOf(in)
		if in == nil {
			if want == "terminated" {
				return true, nil // gone from the listing
			}
			return false, fmt.Errorf("EC2 instance %s disappeared while waiting for it to be %s", id, want)
		}
		if st == want {
			return true, nil
		}
		if want != "terminated" && (st == "shutting-down" || st == "terminated") {
			return false, fmt.Errorf("EC2 instance %s is %s; it cannot become %s", id, st, want)
		}
		slog.Debug("ec2: waiting", "instance", id, "state", st, "want", want)
		return false, nil
	})
	return last, err
}

// ProvisionHost finds the instance named by the params (aws_instance_id,
// or the name tag) and starts it when it is stopped, or launches a new one
// from the launch template or the AMI and instance type. It waits until
// the instance runs and returns aws_instance_id, ssh_hostname (public DNS
// name or IP, else the private IP) and the addresses it has.
func (s *EC2Service) ProvisionHost(ctx context.Context, params services.Params) (services.Params, error) {
	in, err := s.lookup(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("EC2 provisioning: %w", err)
	}
	name, err := s.instanceName(params)
	if err != nil {
		return nil, fmt.Errorf("EC2 provisioning: %w", err)
	}
	var id string
	if in != nil {
		id = in.InstanceID
		slog.Info("ec2: found the host instance", "instance", id, "state", stateOf(in), "name", name)
		if err := s.ensureRunning(ctx, in); err != nil {
			return nil, fmt.Errorf("EC2 provisioning: %w", err)
		}
	} else {
		if name == "" {
			return nil, fmt.Errorf("EC2 provisioning needs an instance name (the %s parameter or config key instance_name): it tags the instance so that the next setup finds it instead of launching another", ParamInstanceName)
		}
		if id, err = s.launch(ctx, params, name); err != nil {
			return nil, fmt.Errorf("EC2 provisioning: %w", err)
		}
	}
	ready, err := s.waitState(ctx, id, "running")
	if err != nil {
		return nil, fmt.Errorf("EC2 provisioning: %w", err)
	}
	return s.hostParams(ready, name), nil
}

// ensureRunning starts an instance that is stopped (or stopping).
func (s *EC2Service) ensureRunning(ctx context.Context, in *ec2Instance) error {
	id := in.InstanceID
	switch stateOf(in) {
	case "running", "pending":
		return nil
	case "stopping":
		if _, err := s.waitState(ctx, id, "stopped"); err != nil {
			return err
		}
	}
	slog.Info("ec2: starting instance", "instance", id)
	if err := s.client.instancesCall(ctx, "StartInstances", []string{id}, nil); err != nil {
		return fmt.Errorf("starting EC2 instance %s: %w", id, err)
	}
	return nil
}

func (s *EC2Service) launch(ctx context.Context, params services.Params, name string) (string, error) {
	image, err := paramString(params, ParamImageID)
	if err != nil {
		return "", err
	}
	if image == "" {
		image = s.cfg.ImageID
	}
	itype, err := paramString(params, ParamInstanceType)
	if err != nil {
		return "", err
	}
	if itype == "" {
		itype = s.cfg.InstanceType
	}
	c := s.cfg
	hasTemplate := c.LaunchTemplateID != "" || c.LaunchTemplateName != ""
	if !hasTemplate && (image == "" || itype == "") {
		return "", errors.New("launching an instance needs a launch template (config launch_template_id or launch_template_name) or an AMI and an instance type (config image_id and instance_type)")
	}
	// ClientToken makes a retried request launch one instance, not two.
	p := url.Values{"MinCount": {"1"}, "MaxCount": {"1"}, "ClientToken": {clientToken()}}
	if hasTemplate {
		p.Set("LaunchTemplate.Version", "$Default")
		if c.LaunchTemplateVersion != "" {
			p.Set("LaunchTemplate.Version", c.LaunchTemplateVersion)
		}
		if c.LaunchTemplateID != "" {
			p.Set("LaunchTemplate.LaunchTemplateId", c.LaunchTemplateID)
		} else {
			p.Set("LaunchTemplate.LaunchTemplateName", c.LaunchTemplateName)
		}
	}
	if image != "" {
		p.Set("ImageId", image)
	}
	if itype != "" {
		p.Set("InstanceType", itype)
	}
	if c.SubnetID != "" {
		p.Set("SubnetId", c.SubnetID)
	}
	addList(p, "SecurityGroupId", c.SecurityGroupIDs)
	if c.KeyName != "" {
		p.Set("KeyName", c.KeyName)
	}
	if c.UserData != "" {
		p.Set("UserData", base64.StdEncoding.EncodeToString([]byte(c.UserData)))
	}
	if ip := c.IamInstanceProfile; ip != "" {
		if strings.HasPrefix(ip, "arn:") {
			p.Set("IamInstanceProfile.Arn", ip)
		} else {
			p.Set("IamInstanceProfile.Name", ip)
		}
	}
	tags := []ec2Tag{{Key: c.NameTag, Value: name}}
	keys := make([]string, 0, len(c.Tags))
	for k := range c.Tags {
		if k != c.NameTag {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		tags = append(tags, ec2Tag{Key: k, Value: c.Tags[k]})
	}
	for i, rt := range []string{"instance", "volume"} {
		pre := "TagSpecification." + strconv.Itoa(i+1)
		p.Set(pre+".ResourceType", rt)
		for j, tg := range tags {
			tp := pre + ".Tag." + strconv.Itoa(j+1)
			p.Set(tp+".Key", tg.Key)
			p.Set(tp+".Value", tg.Value)
		}
	}
	out, err := s.client.runInstances(ctx, p)
	if err != nil {
		return "", fmt.Errorf("launching an EC2 instance: %w", err)
	}
	if len(out) != 1 {
		return "", fmt.Errorf("launching an EC2 instance: AWS returned %d instances, want 1", len(out))
	}
	id := out[0].InstanceID
	slog.Info("ec2: launched instance", "instance", id, "name", name, "type", out[0].InstanceType)
	return id, nil
}

// hostParams are the params ProvisionHost returns.
func (s *EC2Service) hostParams(in *ec2Instance, name string) services.Params {
	p := services.Params{ParamInstanceID: in.InstanceID}
	if name != "" {
		p[ParamInstanceName] = name
	}
	pubDNS, pubIP, privIP := in.PublicDNSName, in.PublicIP, in.PrivateIP
	if pubDNS != "" {
		p[ParamPublicDNS] = pubDNS
	}
	if pubIP != "" {
		p[ParamPublicIP] = pubIP
	}
	if privIP != "" {
		p[ParamPrivateIP] = privIP
	}
	candidates := []string{pubDNS, pubIP, privIP, in.PrivateDNSName}
	if s.cfg.UsePrivateAddress {
		candidates = []string{privIP, in.PrivateDNSName}
	}
	for _, h := range candidates {
		if h != "" {
			p[ParamSSHHostname] = h
			break
		}
	}
	if _, ok := p[ParamSSHHostname]; !ok {
		slog.Warn("ec2: the instance has no address to reach it at; ssh_hostname is not set", "instance", p[ParamInstanceID])
	}
	return p
}

// DeprovisionHost terminates the instance and waits until it is gone. An
// instance that does not exist (any more) is not an error.
func (s *EC2Service) DeprovisionHost(ctx context.Context, params services.Params) error {
	in, err := s.lookup(ctx, params)
	if err != nil {
		return fmt.Errorf("EC2 deprovisioning: %w", err)
	}
	if in == nil {
		slog.Info("ec2: no instance to terminate")
		return nil
	}
	id := in.InstanceID
	slog.Info("ec2: terminating instance", "instance", id)
	if err := s.client.instancesCall(ctx, "TerminateInstances", []string{id}, nil); err != nil {
		if strings.HasPrefix(apiErrorCode(err), "InvalidInstanceID") {
			return nil
		}
		return fmt.Errorf("terminating EC2 instance %s: %w", id, err)
	}
	if _, err := s.waitState(ctx, id, "terminated"); err != nil {
		return fmt.Errorf("EC2 deprovisioning: %w", err)
	}
	return nil
}

// DeallocateHost stops the instance (its volumes stay; compute billing
// stops) and waits until it is stopped.
func (s *EC2Service) DeallocateHost(ctx context.Context, params services.Params) error {
	return s.stop(ctx, params, false, "deallocating")
}

// StartHost starts the instance and waits until it runs.
func (s *EC2Service) StartHost(ctx context.Context, params services.Params) error {
	in, err := s.mustLookup(ctx, params)
	if err != nil {
		return fmt.Errorf("EC2 start: %w", err)
	}
	if err := s.ensureRunning(ctx, in); err != nil {
		return fmt.Errorf("EC2 start: %w", err)
	}
	if _, err := s.waitState(ctx, in.InstanceID, "running"); err != nil {
		return fmt.Errorf("EC2 start: %w", err)
	}
	return nil
}

// StopHost stops the instance (force: without letting the guest OS shut
// down cleanly) and waits until it is stopped.
func (s *EC2Service) StopHost(ctx context.Context, params services.Params, force bool) error {
	return s.stop(ctx, params, force, "stop")
}

func (s *EC2Service) stop(ctx context.Context, params services.Params, force bool, what string) error {
	in, err := s.mustLookup(ctx, params)
	if err != nil {
		return fmt.Errorf("EC2 %s: %w", what, err)
	}
	id := in.InstanceID
	slog.Info("ec2: stopping instance", "instance", id, "force", force)
	if err := s.client.instancesCall(ctx, "StopInstances", []string{id}, url.Values{"Force": {strconv.FormatBool(force)}}); err != nil {
		return fmt.Errorf("EC2 %s: stopping instance %s: %w", what, id, err)
	}
	if _, err := s.waitState(ctx, id, "stopped"); err != nil {
		return fmt.Errorf("EC2 %s: %w", what, err)
	}
	return nil
}

// RestartHost reboots the instance. Without force this is an EC2 reboot
// (RebootInstances: the guest OS restarts, the instance stays "running",
// so there is no state to wait for beyond "running"); with force the
// instance is force-stopped, then started, and waited for until it runs.
func (s *EC2Service) RestartHost(ctx context.Context, params services.Params, force bool) error {
	if force {
		if err := s.stop(ctx, params, true, "restart"); err != nil {
			return err
		}
		return s.StartHost(ctx, params)
	}
	in, err := s.mustLookup(ctx, params)
	if err != nil {
		return fmt.Errorf("EC2 restart: %w", err)
	}
	id := in.InstanceID
	slog.Info("ec2: rebooting instance", "instance", id)
	if err := s.client.instancesCall(ctx, "RebootInstances", []string{id}, nil); err != nil {
		return fmt.Errorf("EC2 restart: rebooting instance %s: %w", id, err)
	}
	if _, err := s.waitState(ctx, id, "running"); err != nil {
		return fmt.Errorf("EC2 restart: %w", err)
	}
	return nil
}

// Shutdown stops the instance through the EC2 API (the guest OS gets an
// ACPI shutdown; force skips it) and waits until it is stopped. For a
// shutdown from inside the OS, use an SSH service's OSOps.
func (s *EC2Service) Shutdown(ctx context.Context, params services.Params, force bool) error {
	return s.stop(ctx, params, force, "shutdown")
}

// Reboot reboots the instance through the EC2 API, as RestartHost does.
func (s *EC2Service) Reboot(ctx context.Context, params services.Params, force bool) error {
	return s.RestartHost(ctx, params, force)
}
