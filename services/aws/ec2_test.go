package aws

import (
	"context"
	"encoding/base64"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"net/url"

	"github.com/google/go-cmp/cmp"

	"github.com/benchtune/bench/services"
)

func TestEC2ConfigErrors(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	tests := []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"both templates", map[string]any{"launch_template_id": "lt-1", "launch_template_name": "x"}, "/config/launch_template_name: give launch_template_id or launch_template_name, not both"},
		{"version alone", map[string]any{"launch_template_version": "3"}, "/config/launch_template_version: launch_template_version needs"},
		{"zero poll", map[string]any{"poll_interval": 0}, "/config/poll_interval: must be a positive duration"},
		{"bad timeout", map[string]any{"poll_timeout": "soon"}, "/config/poll_timeout"},
		{"empty sg", map[string]any{"security_group_ids": []any{"sg-1", " "}}, "/config/security_group_ids/1: a security group id must not be empty"},
		{"aws tag", map[string]any{"tags": map[string]any{"aws:x": "y"}}, "/config/tags/aws:x: tag keys"},
		{"unknown", map[string]any{"instance_typ": "t2.micro"}, `/config/instance_typ: unknown config key "instance_typ"`},
		{"endpoint", map[string]any{"endpoint": "ftp://x"}, "/config/endpoint:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := services.New(t.Context(), services.Spec{Class: EC2ClassShort, Config: tc.cfg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// newMotoEC2 builds an AwsEc2Service on the moto server through the class
// registry; extra config keys are added to the defaults.
func newMotoEC2(t *testing.T, extra map[string]any) *EC2Service {
	t.Helper()
	ep := motoEnv(t)
	cfg := map[string]any{"endpoint": ep, "region": "us-east-1", "poll_interval": 0.05, "poll_timeout": 20}
	for k, v := range extra {
		cfg[k] = v
	}
	svc, err := services.New(t.Context(), services.Spec{Class: EC2ClassFull, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return svc.(*EC2Service)
}

// motoAMI returns an image id that moto knows.
func motoAMI(t *testing.T, s *EC2Service) string {
	t.Helper()
	var out struct {
		Images []string `xml:"imagesSet>item>imageId"`
	}
	if err := s.client.api.Query(t.Context(), "DescribeImages", ec2Version, url.Values{"Owner.1": {"amazon"}}, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Images) == 0 {
		t.Fatal("moto lists no AMIs")
	}
	return out.Images[0]
}

func mustDescribe(t *testing.T, s *EC2Service, id string) *ec2Instance {
	t.Helper()
	in, err := s.describe(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if in == nil {
		t.Fatalf("instance %s does not exist", id)
	}
	return in
}

func tagMap(tags []ec2Tag) map[string]string {
	m := map[string]string{}
	for _, tg := range tags {
		m[tg.Key] = tg.Value
	}
	return m
}

// instancesTagged lists the live instances with the name tag.
func instancesTagged(t *testing.T, s *EC2Service, name string) []string {
	t.Helper()
	out, err := s.client.describeInstances(t.Context(), nil, []ec2Filter{
		{Name: "tag:" + s.cfg.NameTag, Values: []string{name}},
		{Name: "instance-state-name", Values: liveStates},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range out {
		ids = append(ids, in.InstanceID)
	}
	return ids
}

func TestEC2Lifecycle(t *testing.T) {
	probe := newMotoEC2(t, nil)
	ami := motoAMI(t, probe)
	s := newMotoEC2(t, map[string]any{
		"image_id":      ami,
		"instance_type": "t2.micro",
		"tags":          map[string]any{"project": "bench", "owner": "tests"},
		"user_data":     "#cloud-config\nruncmd: [echo hi]\n",
	})
	ctx := t.Context()
	name := uniqueName(t, "bench-host-")
	params := services.Params{ParamInstanceName: name}

	got, err := s.ProvisionHost(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := got[ParamInstanceID].(string)
	if !strings.HasPrefix(id, "i-") {
		t.Fatalf("aws_instance_id = %v, want an instance id", got[ParamInstanceID])
	}
	in := mustDescribe(t, s, id)
	want := services.Params{
		ParamInstanceID:   id,
		ParamInstanceName: name,
		ParamPrivateIP:    in.PrivateIP,
		ParamSSHHostname:  in.PrivateIP,
	}
	if dns := in.PublicDNSName; dns != "" {
		want[ParamPublicDNS] = dns
		want[ParamSSHHostname] = dns
	}
	if ip := in.PublicIP; ip != "" {
		want[ParamPublicIP] = ip
		if _, ok := want[ParamPublicDNS]; !ok {
			want[ParamSSHHostname] = ip
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ProvisionHost params (-want +got):\n%s", diff)
	}
	if got[ParamSSHHostname] == "" {
		t.Errorf("no ssh_hostname returned")
	}
	if st := stateOf(in); st != "running" {
		t.Errorf("state = %s, want running", st)
	}
	if diff := cmp.Diff(map[string]string{"Name": name, "project": "bench", "owner": "tests"}, tagMap(in.Tags)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if it := in.InstanceType; it != "t2.micro" {
		t.Errorf("instance type = %s, want t2.micro", it)
	}
	if img := in.ImageID; img != ami {
		t.Errorf("image = %s, want %s", img, ami)
	}
	var ud struct {
		UserData string `xml:"userData>value"`
	}
	if err := s.client.api.Query(ctx, "DescribeInstanceAttribute", ec2Version, url.Values{"InstanceId": {id}, "Attribute": {"userData"}}, &ud); err != nil {
		t.Fatal(err)
	}
	if raw, _ := base64.StdEncoding.DecodeString(ud.UserData); string(raw) != "#cloud-config\nruncmd: [echo hi]\n" {
		t.Errorf("user data = %q", raw)
	}

	// Idempotent: by name, and by id.
	for _, p := range []services.Params{{ParamInstanceName: name}, {ParamInstanceID: id}} {
		again, err := s.ProvisionHost(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if again[ParamInstanceID] != id {
			t.Errorf("ProvisionHost(%v) = instance %v, want the existing %s", p, again[ParamInstanceID], id)
		}
	}
	if ids := instancesTagged(t, s, name); len(ids) != 1 {
		t.Errorf("instances tagged %s: %v, want exactly one", name, ids)
	}

	byID := services.Params{ParamInstanceID: id}
	steps := []struct {
		name string
		op   func() error
		want string
	}{
		{"stop", func() error { return s.StopHost(ctx, byID, false) }, "stopped"},
		{"provision starts a stopped host", func() error {
			p, err := s.ProvisionHost(ctx, params)
			if err == nil && p[ParamInstanceID] != id {
				t.Errorf("ProvisionHost launched %v instead of starting %s", p[ParamInstanceID], id)
			}
			return err
		}, "running"},
		{"start a running host", func() error { return s.StartHost(ctx, byID) }, "running"},
		{"force stop by name", func() error { return s.StopHost(ctx, params, true) }, "stopped"},
		{"stop a stopped host", func() error { return s.StopHost(ctx, byID, false) }, "stopped"},
		{"start", func() error { return s.StartHost(ctx, params) }, "running"},
		{"reboot", func() error { return s.RestartHost(ctx, byID, false) }, "running"},
		{"forced restart", func() error { return s.RestartHost(ctx, byID, true) }, "running"},
		{"os shutdown", func() error { return s.Shutdown(ctx, byID, false) }, "stopped"},
		{"os reboot of a stopped host", func() error { return s.Reboot(ctx, byID, true) }, "running"},
		{"os reboot", func() error { return s.Reboot(ctx, byID, false) }, "running"},
		{"deallocate", func() error { return s.DeallocateHost(ctx, params) }, "stopped"},
		{"deprovision", func() error { return s.DeprovisionHost(ctx, byID) }, "terminated"},
		{"deprovision again", func() error { return s.DeprovisionHost(ctx, byID) }, "terminated"},
		{"deprovision again by name", func() error { return s.DeprovisionHost(ctx, params) }, "terminated"},
	}
	for _, st := range steps {
		if err := st.op(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := stateOf(mustDescribe(t, s, id)); got != st.want {
			t.Fatalf("%s: state = %s, want %s", st.name, got, st.want)
		}
	}

	// A terminated instance is not reused: operations on it fail, and
	// provisioning by name launches a new one.
	if err := s.StartHost(ctx, byID); err == nil || !strings.Contains(err.Error(), "does not exist (or is terminated)") {
		t.Errorf("StartHost on a terminated instance: error = %v", err)
	}
	fresh, err := s.ProvisionHost(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if fresh[ParamInstanceID] == id {
		t.Errorf("ProvisionHost reused the terminated instance %s", id)
	}
	if err := s.DeprovisionHost(ctx, params); err != nil {
		t.Fatal(err)
	}
	if ids := instancesTagged(t, s, name); len(ids) != 0 {
		t.Errorf("live instances tagged %s after deprovisioning: %v", name, ids)
	}
}

func TestEC2LaunchTemplate(t *testing.T) {
	s0 := newMotoEC2(t, nil)
	ctx := t.Context()
	ami := motoAMI(t, s0)
	ltName := uniqueName(t, "bench-lt-")
	var lt struct {
		ID string `xml:"launchTemplate>launchTemplateId"`
	}
	if err := s0.client.api.Query(ctx, "CreateLaunchTemplate", ec2Version, url.Values{
		"LaunchTemplateName": {ltName}, "LaunchTemplateData.ImageId": {ami}, "LaunchTemplateData.InstanceType": {"t2.nano"},
	}, &lt); err != nil {
		t.Fatal(err)
	}
	ltID := lt.ID

	tests := []struct {
		name     string
		cfg      map[string]any
		params   services.Params
		wantType string
	}{
		{"by name", map[string]any{"launch_template_name": ltName, "launch_template_version": "1"}, nil, "t2.nano"},
		{"by id, default version", map[string]any{"launch_template_id": ltID}, nil, "t2.nano"},
		{"type from a parameter", map[string]any{"launch_template_id": ltID, "launch_template_version": "$Latest"}, services.Params{ParamInstanceType: "t2.small"}, "t2.small"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newMotoEC2(t, tc.cfg)
			name := uniqueName(t, "bench-lt-host-")
			params := services.Params{ParamInstanceName: name}
			for k, v := range tc.params {
				params[k] = v
			}
			got, err := s.ProvisionHost(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			in := mustDescribe(t, s, got[ParamInstanceID].(string))
			if it := in.InstanceType; it != tc.wantType {
				t.Errorf("instance type = %s, want %s", it, tc.wantType)
			}
			if img := in.ImageID; img != ami {
				t.Errorf("image = %s, want the template's %s", img, ami)
			}
			if err := s.DeprovisionHost(ctx, params); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEC2PrivateAddress(t *testing.T) {
	s0 := newMotoEC2(t, nil)
	s := newMotoEC2(t, map[string]any{"image_id": motoAMI(t, s0), "instance_type": "t2.micro", "use_private_address": true, "instance_name": uniqueName(t, "bench-priv-")})
	got, err := s.ProvisionHost(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DeprovisionHost(context.Background(), got) })
	if got[ParamSSHHostname] == "" || got[ParamSSHHostname] != got[ParamPrivateIP] {
		t.Errorf("ssh_hostname = %v, want the private IP %v", got[ParamSSHHostname], got[ParamPrivateIP])
	}
}

func TestEC2Errors(t *testing.T) {
	s0 := newMotoEC2(t, nil)
	ami := motoAMI(t, s0)
	ctx := t.Context()

	t.Run("no name", func(t *testing.T) {
		s := newMotoEC2(t, map[string]any{"image_id": ami, "instance_type": "t2.micro"})
		_, err := s.ProvisionHost(ctx, services.Params{})
		if err == nil || !strings.Contains(err.Error(), "no EC2 instance named") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("nothing to launch from", func(t *testing.T) {
		s := newMotoEC2(t, map[string]any{"instance_type": "t2.micro"})
		_, err := s.ProvisionHost(ctx, services.Params{ParamInstanceName: uniqueName(t, "x-")})
		if err == nil || !strings.Contains(err.Error(), "needs a launch template") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("unknown instance", func(t *testing.T) {
		for _, op := range []func(services.Params) error{
			func(p services.Params) error { return s0.StartHost(ctx, p) },
			func(p services.Params) error { return s0.StopHost(ctx, p, false) },
			func(p services.Params) error { return s0.RestartHost(ctx, p, false) },
			func(p services.Params) error { return s0.Shutdown(ctx, p, true) },
		} {
			err := op(services.Params{ParamInstanceID: "i-0123456789abcdef0"})
			if err == nil || !strings.Contains(err.Error(), "i-0123456789abcdef0 does not exist") {
				t.Errorf("error = %v", err)
			}
		}
	})
	t.Run("AWS error code and message are kept", func(t *testing.T) {
		s := newMotoEC2(t, map[string]any{"image_id": ami, "instance_type": "t2.micro", "subnet_id": "subnet-0bench0nope"})
		_, err := s.ProvisionHost(ctx, services.Params{ParamInstanceName: uniqueName(t, "bench-badsubnet-")})
		if err == nil || !strings.Contains(err.Error(), "launching an EC2 instance: EC2 RunInstances: HTTP 400") ||
			!strings.Contains(err.Error(), "api error InvalidSubnetID.NotFound: The subnet ID 'subnet-0bench0nope' does not exist") {
			t.Errorf("error = %v", err)
		}
		if code := apiErrorCode(err); code != "InvalidSubnetID.NotFound" {
			t.Errorf("apiErrorCode = %q", code)
		}
	})
	t.Run("bad parameter type", func(t *testing.T) {
		_, err := s0.ProvisionHost(ctx, services.Params{ParamInstanceName: []any{"x"}})
		if err == nil || !strings.Contains(err.Error(), `parameter "aws_instance_name" must be a string`) {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("ambiguous name", func(t *testing.T) {
		name := uniqueName(t, "bench-twin-")
		out, err := s0.client.runInstances(ctx, url.Values{
			"ImageId": {ami}, "InstanceType": {"t2.micro"}, "MinCount": {"2"}, "MaxCount": {"2"},
			"TagSpecification.1.ResourceType": {"instance"}, "TagSpecification.1.Tag.1.Key": {"Name"}, "TagSpecification.1.Tag.1.Value": {name},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s0.ProvisionHost(ctx, services.Params{ParamInstanceName: name})
		if err == nil || !strings.Contains(err.Error(), "several EC2 instances are tagged Name="+name) {
			t.Errorf("error = %v", err)
		}
		for _, in := range out {
			if err := s0.DeprovisionHost(ctx, services.Params{ParamInstanceID: in.InstanceID}); err != nil {
				t.Error(err)
			}
		}
	})
}

// moto moves instances between states at once, so a public operation
// never waits long enough to time out. The waiting itself is tested here
// against moto by waiting for a state the instance is not going to reach.
func TestEC2WaitTimeout(t *testing.T) {
	s := newMotoEC2(t, map[string]any{"poll_interval": 0.05, "poll_timeout": 0.3})
	ami := motoAMI(t, s)
	ctx := t.Context()
	name := uniqueName(t, "bench-wait-")
	s.cfg.ImageID, s.cfg.InstanceType = ami, "t2.micro"
	p, err := s.ProvisionHost(ctx, services.Params{ParamInstanceName: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DeprovisionHost(context.Background(), p) })
	id := p[ParamInstanceID].(string)

	start := time.Now()
	_, err = s.waitState(ctx, id, "stopped") // it runs, and nothing stops it
	if !errors.Is(err, services.ErrTimeout) {
		t.Fatalf("error = %v, want services.ErrTimeout", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("waited %s, want about the poll_timeout of 300ms", d)
	}
	if !strings.Contains(err.Error(), "waited 300ms for EC2 instance "+id+" to be stopped") {
		t.Errorf("error = %q", err)
	}

	// The context's deadline also ends a wait, as a timeout.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	s.poll.timeout = time.Minute
	if _, err := s.waitState(short, id, "stopped"); !errors.Is(err, services.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	// A cancelled context is not a timeout.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := s.waitState(cctx, id, "stopped"); errors.Is(err, services.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled only", err)
	}

	// An unreachable state fails at once rather than timing out.
	if err := s.DeprovisionHost(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.waitState(ctx, id, "running"); err == nil || errors.Is(err, services.ErrTimeout) || !strings.Contains(err.Error(), "cannot become running") {
		t.Fatalf("error = %v, want an immediate 'cannot become running'", err)
	}
}
