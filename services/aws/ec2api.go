package aws

import (
	"context"
	"crypto/rand"
	"net/url"
	"strconv"

	"github.com/benchtune/bench/internal/awsapi"
)

// ec2Version is the EC2 Query API version bench speaks.
const ec2Version = "2016-11-15"

// ec2Client makes EC2's Query API calls that bench needs (see
// internal/awsapi: the SDK's service/ec2 package was a third of bench's
// compile time for these few calls).
type ec2Client struct{ api *awsapi.Client }

// ec2Instance is the part of an EC2 instance description bench reads.
type ec2Instance struct {
	InstanceID   string `xml:"instanceId"`
	ImageID      string `xml:"imageId"`
	InstanceType string `xml:"instanceType"`
	State        struct {
		Name string `xml:"name"`
	} `xml:"instanceState"`
	PrivateDNSName string   `xml:"privateDnsName"`
	PublicDNSName  string   `xml:"dnsName"`
	PrivateIP      string   `xml:"privateIpAddress"`
	PublicIP       string   `xml:"ipAddress"`
	Tags           []ec2Tag `xml:"tagSet>item"`
}

type ec2Tag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

type ec2Filter struct {
	Name   string
	Values []string
}

// describeInstances lists the instances with these ids and filters, all
// pages.
func (c ec2Client) describeInstances(ctx context.Context, ids []string, filters []ec2Filter) ([]ec2Instance, error) {
	p := url.Values{}
	addList(p, "InstanceId", ids)
	for i, f := range filters {
		pre := "Filter." + strconv.Itoa(i+1)
		p.Set(pre+".Name", f.Name)
		addList(p, pre+".Value", f.Values)
	}
	var all []ec2Instance
	for {
		var out struct {
			Reservations []struct {
				Instances []ec2Instance `xml:"instancesSet>item"`
			} `xml:"reservationSet>item"`
			NextToken string `xml:"nextToken"`
		}
		if err := c.api.Query(ctx, "DescribeInstances", ec2Version, p, &out); err != nil {
			return nil, err
		}
		for _, r := range out.Reservations {
			all = append(all, r.Instances...)
		}
		if out.NextToken == "" {
			return all, nil
		}
		p.Set("NextToken", out.NextToken)
	}
}

// instancesCall calls one of the operations on a list of instance ids
// (StartInstances, StopInstances, ...), with extra fields.
func (c ec2Client) instancesCall(ctx context.Context, action string, ids []string, extra url.Values) error {
	p := url.Values{}
	for k, v := range extra {
		p[k] = v
	}
	addList(p, "InstanceId", ids)
	return c.api.Query(ctx, action, ec2Version, p, nil)
}

// runInstances launches instances; p holds RunInstances' fields.
func (c ec2Client) runInstances(ctx context.Context, p url.Values) ([]ec2Instance, error) {
	var out struct {
		Instances []ec2Instance `xml:"instancesSet>item"`
	}
	if err := c.api.Query(ctx, "RunInstances", ec2Version, p, &out); err != nil {
		return nil, err
	}
	return out.Instances, nil
}

// addList adds name.1, name.2, ... (EC2's list encoding).
func addList(p url.Values, name string, vals []string) {
	for i, v := range vals {
		p.Set(name+"."+strconv.Itoa(i+1), v)
	}
}

// clientToken returns a fresh idempotency token for RunInstances.
func clientToken() string {
	return "bench-" + rand.Text()
}
