package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/benchtune/bench/engines"
	"github.com/benchtune/bench/engines/kubernetes/kubeapi"
)

// The far side's outcome goes to configmap://NAMESPACE/NAME: a ConfigMap
// with the outcome under outcome.json, created by `bench exec-trial` in
// the Job's pod with the pod's service account (in-cluster config; or
// $KUBECONFIG where the pod has one). It is owned by the pod ($BENCH_POD_NAME,
// $BENCH_POD_UID), so it goes away with the pod. Creating is all the pod
// needs: its Role grants "create" on configmaps, not "update", so a
// trial cannot change the ConfigMaps of others.

func init() {
	engines.RegisterScheme("configmap", &cmStore{})
}

// maxConfigMap is a ConfigMap's size limit (1 MiB) with room for its
// metadata.
const maxConfigMap = 1000 * 1024

type cmStore struct {
	once sync.Once
	c    *kubeapi.Client
	err  error
}

func (s *cmStore) client() (*kubeapi.Client, error) {
	s.once.Do(func() {
		var rc *kubeapi.Config
		if os.Getenv("KUBECONFIG") == "" && kubeapi.InCluster() {
			rc, s.err = kubeapi.InClusterConfig()
		} else {
			rc, s.err = kubeapi.LoadKubeconfig(kubeapi.KubeconfigPaths(""), "")
		}
		if s.err == nil {
			s.c = kubeapi.NewClient(rc)
		}
	})
	return s.c, s.err
}

func parseCMURL(u string) (ns, name string, err error) {
	rest, ok := strings.CutPrefix(u, "configmap://")
	if !ok {
		return "", "", fmt.Errorf("%q is not a configmap:// URL", u)
	}
	ns, name, _ = strings.Cut(rest, "/")
	if !dns1123Label.MatchString(ns) || !dns1123Subdomain(name) {
		return "", "", fmt.Errorf("%q: want configmap://NAMESPACE/NAME", u)
	}
	return ns, name, nil
}

// Read returns the outcome (or request) a ConfigMap holds.
func (s *cmStore) Read(ctx context.Context, u string) ([]byte, error) {
	ns, name, err := parseCMURL(u)
	if err != nil {
		return nil, err
	}
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	var cm kubeapi.ConfigMap
	if err := c.Do(ctx, http.MethodGet, "/api/v1/namespaces/"+ns+"/configmaps/"+name, nil, nil, &cm); err != nil {
		return nil, err
	}
	for _, k := range []string{OutcomeKey, RequestKey} {
		if v, ok := cm.Data[k]; ok {
			return []byte(v), nil
		}
	}
	return nil, fmt.Errorf("ConfigMap %s/%s holds neither %s nor %s", ns, name, OutcomeKey, RequestKey)
}

// Write creates the outcome ConfigMap, owned by this pod.
func (s *cmStore) Write(ctx context.Context, u string, data []byte) error {
	ns, name, err := parseCMURL(u)
	if err != nil {
		return err
	}
	if len(data) > maxConfigMap {
		return fmt.Errorf("the outcome (%d bytes) is larger than a ConfigMap may be (1 MiB): the trial wrote too much output", len(data))
	}
	c, err := s.client()
	if err != nil {
		return err
	}
	cm := kubeapi.ConfigMap{APIVersion: "v1", Kind: "ConfigMap", Metadata: kubeapi.ObjectMeta{Name: name,
		Labels: map[string]string{managedLabel: managedValue}}, Data: map[string]string{OutcomeKey: string(data)}}
	if pod, uid := os.Getenv(PodNameEnv), os.Getenv(PodUIDEnv); pod != "" && uid != "" {
		cm.Metadata.OwnerReferences = []kubeapi.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod, UID: uid}}
	}
	err = c.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+ns+"/configmaps", nil, cm, nil)
	if kubeapi.IsConflict(err) {
		return errors.New("the outcome ConfigMap " + ns + "/" + name + " already exists (written twice?)")
	}
	return err
}
