package dockerx

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/dockctl/dockctl/manifests"
)

// testPodNetwork is the instance network as the controller attaches a pod
// of namespace shop to it.
func testPodNetwork() *PodNetwork {
	return &PodNetwork{
		Name: "dockctl_default", IPv4: "10.222.0.77", Aliases: []string{"web-5d8f7c9b6-0"},
		DNS:        []string{"10.222.8.1"},
		DNSSearch:  []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"},
		DNSOptions: []string{"ndots:5"},
	}
}

// inNamespace puts the request's deployment in namespace shop, on the
// instance network.
func inNamespace(req CreateRequest) CreateRequest {
	req.From.Namespace = "shop"
	req.Namespace = "shop"
	req.Network = testPodNetwork()
	return req
}

// networkGoldenCases are the golden files of containers on the instance
// network (docs/design.md §10): what Network and Namespace add, beside the
// goldens of today's containers, which they leave unchanged when unset.
func networkGoldenCases() []goldenCase {
	// A replica whose template names an additional network.
	replica := request(deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "dockctl-net"}
		d.Spec.Template.Spec.Containers[0].Ports = []manifests.ContainerPort{{ContainerPort: 8080, HostPort: 18080, HostIP: "127.0.0.1"}}
	}))
	holderPod := podDeployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "dockctl-net"}
	})
	memberPod := podDeployment("web", nil)
	return []goldenCase{
		{"network-replica", inNamespace(replica), testLogs},
		{"network-pod-holder", inNamespace(podRequest(holderPod, RoleHolder, "")), ContainerLogs{}},
		{"network-pod-member", inNamespace(podRequest(memberPod, RoleReplica, "app")), ContainerLogs{}},
	}
}

func TestBuildConfigPodNetwork(t *testing.T) {
	pn := testPodNetwork()
	staticEP := &network.EndpointSettings{IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: "10.222.0.77"}, Aliases: []string{"web-5d8f7c9b6-0"}}
	withAnnotation := func(n string) func(*manifests.Deployment) {
		return func(d *manifests.Deployment) {
			d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: n}
		}
	}
	holder := func(mutate func(*manifests.Deployment)) CreateRequest {
		return podRequest(podDeployment("web", mutate), RoleHolder, "")
	}
	for _, tt := range []struct {
		name      string
		req       CreateRequest
		network   *PodNetwork
		wantMode  string
		wantHost  bool // a hostname is set
		wantEP    map[string]*network.EndpointSettings
		wantDNS   bool // the resolver settings of pn
		wantExtra []NetworkAttachment
	}{
		{name: "replica on the instance network", req: request(deployment("web", nil)), network: pn,
			wantMode: "dockctl_default", wantHost: true, wantEP: map[string]*network.EndpointSettings{"dockctl_default": staticEP}, wantDNS: true},
		{name: "dynamic address, no alias", req: request(deployment("web", nil)), network: &PodNetwork{Name: "dockctl_default"},
			wantMode: "dockctl_default", wantHost: true, wantEP: map[string]*network.EndpointSettings{"dockctl_default": {}}},
		{name: "the annotation's network becomes an additional one, with the deployment's alias",
			req: request(deployment("web", withAnnotation("dockctl-net"))), network: pn,
			wantMode: "dockctl_default", wantHost: true, wantEP: map[string]*network.EndpointSettings{"dockctl_default": staticEP}, wantDNS: true,
			wantExtra: []NetworkAttachment{{Network: "dockctl-net", Endpoint: EndpointSettings{Aliases: []string{"web"}}}}},
		{name: "the default bridge as an additional network: no alias (Docker allows none there)",
			req: request(deployment("web", withAnnotation("bridge"))), network: pn,
			wantMode: "dockctl_default", wantHost: true, wantEP: map[string]*network.EndpointSettings{"dockctl_default": staticEP}, wantDNS: true,
			wantExtra: []NetworkAttachment{{Network: "bridge"}}},
		{name: "the annotation names the instance network: its alias joins the endpoint's",
			req: request(deployment("web", withAnnotation("dockctl_default"))), network: pn,
			wantMode: "dockctl_default", wantHost: true, wantDNS: true, wantEP: map[string]*network.EndpointSettings{"dockctl_default": {
				IPAMConfig: staticEP.IPAMConfig, Aliases: []string{"web-5d8f7c9b6-0", "web"}}}},
		{name: "an earlier release's host annotation keeps its meaning", req: request(deployment("web", withAnnotation("host"))), network: pn,
			wantMode: "host", wantHost: true},
		{name: "an earlier release's container: annotation keeps its meaning", req: request(deployment("web", withAnnotation("container:x"))), network: pn,
			wantMode: "container:x", wantHost: true},
		{name: "hostNetwork ignores the pod network", network: pn, wantMode: "host",
			req: request(deployment("web", func(d *manifests.Deployment) {
				d.Spec.Template.Spec.HostNetwork = true
				d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "dockctl-net"}
			}))},
		{name: "holder on the instance network", req: holder(withAnnotation("dockctl-net")), network: pn,
			wantMode: "dockctl_default", wantHost: true, wantEP: map[string]*network.EndpointSettings{"dockctl_default": staticEP}, wantDNS: true,
			wantExtra: []NetworkAttachment{{Network: "dockctl-net", Endpoint: EndpointSettings{Aliases: []string{"web"}}}}},
		{name: "hostNetwork holder", network: pn, wantMode: "host", req: holder(func(d *manifests.Deployment) { d.Spec.Template.Spec.HostNetwork = true })},
		{name: "member: joins its holder, nothing of the pod network", network: pn, wantMode: "container:default_web-5d8f7c9b6-0",
			req: podRequest(podDeployment("web", withAnnotation("dockctl-net")), RoleReplica, "app")},
		{name: "no pod network: today's annotation network", req: request(deployment("web", withAnnotation("dockctl-net"))),
			wantMode: "dockctl-net", wantHost: true, wantEP: map[string]*network.EndpointSettings{"dockctl-net": {Aliases: []string{"web"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Network = tt.network
			cfg, hc, nc, err := BuildConfig(req)
			if err != nil {
				t.Fatal(err)
			}
			if string(hc.NetworkMode) != tt.wantMode || (cfg.Hostname != "") != tt.wantHost {
				t.Errorf("network mode %q hostname %q; want %q, a hostname: %v", hc.NetworkMode, cfg.Hostname, tt.wantMode, tt.wantHost)
			}
			if !reflect.DeepEqual(nc.EndpointsConfig, tt.wantEP) {
				t.Errorf("endpoints %+v, want %+v", nc.EndpointsConfig, tt.wantEP)
			}
			dns := [][]string{hc.DNS, hc.DNSSearch, hc.DNSOptions}
			if want := [][]string{pn.DNS, pn.DNSSearch, pn.DNSOptions}; tt.wantDNS != reflect.DeepEqual(dns, want) || (!tt.wantDNS && (hc.DNS != nil || hc.DNSSearch != nil || hc.DNSOptions != nil)) {
				t.Errorf("resolver %v, want the pod network's: %v", dns, tt.wantDNS)
			}
			if got := ExtraNetworks(req); !reflect.DeepEqual(got, tt.wantExtra) {
				t.Errorf("ExtraNetworks = %+v, want %+v", got, tt.wantExtra)
			}
		})
	}
}

// The namespace labels every container and volume of the pod (the
// deployment's when the request names none), and no template can claim a
// namespace or a helper's labels.
func TestBuildConfigNamespace(t *testing.T) {
	claims := func(d *manifests.Deployment) {
		d.Metadata.Namespace = "shop"
		maps.Copy(d.Spec.Template.Metadata.Labels, map[string]string{LabelNamespace: "kube-system", LabelService: "web", LabelConfigHash: "x"})
	}
	replica := request(deployment("web", claims))
	holder := podRequest(podDeployment("web", claims), RoleHolder, "")
	member := podRequest(podDeployment("web", claims), RoleReplica, "app")
	for _, req := range []CreateRequest{replica, holder, member} {
		for _, ns := range []string{"", "shop"} {
			req.Namespace = ns
			cfg, hc, _, err := BuildConfig(req)
			if err != nil {
				t.Fatal(err)
			}
			// "" is the deployment's own namespace, labelled as such.
			want := "shop"
			if got := cfg.Labels[LabelNamespace]; got != want || cfg.Labels[LabelService] != "" || cfg.Labels[LabelConfigHash] != "" {
				t.Errorf("%s, namespace %q: labels %v", req.Name, ns, cfg.Labels)
			}
			for _, m := range hc.Mounts {
				if m.VolumeOptions == nil {
					continue
				}
				if got := m.VolumeOptions.Labels[LabelNamespace]; got != want {
					t.Errorf("%s, namespace %q: volume %s labels %v", req.Name, ns, m.Source, m.VolumeOptions.Labels)
				}
			}
		}
	}
	// The default namespace is "" or "default" on the deployment.
	d := deployment("web", nil)
	if _, _, _, err := BuildConfig(CreateRequest{Instance: "i", Name: "i_web-h-0", TemplateHash: "h", From: TemplateOf(d), Namespace: "default"}); err != nil {
		t.Errorf("namespace default of a deployment without one: %v", err)
	}
	for _, tt := range []struct {
		name string
		req  CreateRequest
		want string
	}{
		{"namespace not the deployment's", CreateRequest{Instance: "i", Name: "n", From: TemplateOf(deployment("web", claims)), Namespace: "default"},
			`namespace "default" is not the deployment's "shop"`},
		{"pod network without a name", CreateRequest{Instance: "i", Name: "n", From: TemplateOf(d), Network: &PodNetwork{IPv4: "10.0.0.1"}},
			"the pod network has no name"},
	} {
		if _, _, _, err := BuildConfig(tt.req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: BuildConfig = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestVolumeLabelsNamespace(t *testing.T) {
	req := volumeRequest("cache", false, 0)
	if got := VolumeLabels(req)[LabelNamespace]; got != "default" {
		t.Errorf("labels %v: want namespace default when none is asked for", VolumeLabels(req))
	}
	req.Namespace = "shop"
	if got := VolumeLabels(req)[LabelNamespace]; got != "shop" {
		t.Errorf("labels %v, want namespace shop", VolumeLabels(req))
	}
}

var errNotFoundNetwork = cerrdefs.ErrNotFound.WithMessage("network dockctl-net not found")

// createAPI records creates, connects and removals, for CreateContainer.
type createAPI struct {
	networksAPI
	cmu      sync.Mutex
	created  []string
	nc       *network.NetworkingConfig
	removed  []string
	removeOK bool
}

func (f *createAPI) ContainerCreate(_ context.Context, _ *container.Config, _ *container.HostConfig, nc *network.NetworkingConfig, _ *ocispec.Platform, name string) (container.CreateResponse, error) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	f.created = append(f.created, name)
	f.nc = nc
	return container.CreateResponse{ID: "id-" + name}, nil
}

func (f *createAPI) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	f.removed = append(f.removed, id)
	return nil
}

func (f *createAPI) Info(context.Context) (system.Info, error) {
	return system.Info{LoggingDriver: "json-file"}, nil
}

// CreateContainer creates on the instance network and connects the
// additional one before returning; a container that cannot join it is
// removed, so that the create can be retried under the same name.
func TestCreateContainerExtraNetworks(t *testing.T) {
	req := inNamespace(request(deployment("web", func(d *manifests.Deployment) {
		d.Spec.Template.Metadata.Annotations = map[string]string{manifests.AnnotationNetwork: "dockctl-net"}
	})))
	for _, tt := range []struct {
		name        string
		connErr     error
		wantErr     error
		wantRemoved []string
	}{
		{name: "connected"},
		{name: "the additional network is missing", connErr: errNotFoundNetwork, wantErr: ErrNotFound, wantRemoved: []string{"id-" + req.Name}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &createAPI{networksAPI: networksAPI{connErr: tt.connErr, attached: map[string][]string{"id-" + req.Name: {"dockctl_default"}}}}
			c := newNetworksClient(&f.networksAPI)
			c.api = f
			id, err := c.CreateContainer(context.Background(), req)
			if !reflect.DeepEqual(f.created, []string{req.Name}) || len(f.nc.EndpointsConfig) != 1 || f.nc.EndpointsConfig["dockctl_default"] == nil {
				t.Errorf("created %v with endpoints %+v: want one create on the instance network", f.created, f.nc.EndpointsConfig)
			}
			if want := []string{"dockctl-net id-" + req.Name}; !reflect.DeepEqual(f.connectTo, want) ||
				!reflect.DeepEqual(f.connects[0], &network.EndpointSettings{Aliases: []string{"web"}}) {
				t.Errorf("connects %v %+v, want %v with the deployment's alias", f.connectTo, f.connects, want)
			}
			if !reflect.DeepEqual(f.removed, tt.wantRemoved) {
				t.Errorf("removed %v, want %v", f.removed, tt.wantRemoved)
			}
			if tt.wantErr == nil {
				if err != nil || id != "id-"+req.Name {
					t.Errorf("CreateContainer = %q, %v", id, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || id != "" {
				t.Errorf("CreateContainer = %q, %v; want an error wrapping %v", id, err, tt.wantErr)
			}
		})
	}
}
