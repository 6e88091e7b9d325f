package dockerx

import (
	"strconv"
	"strings"
	"testing"
)

func TestContainerNameRoundTrip(t *testing.T) {
	tests := []struct {
		instance, namespace, deployment, hash string
		ordinal                               int
		want                                  string
	}{
		// The default namespace keeps the names of earlier releases.
		{"default", "", "web", "5d8f7c9b6", 0, "default_web-5d8f7c9b6-0"},
		{"default", "default", "web", "5d8f7c9b6", 0, "default_web-5d8f7c9b6-0"},
		{"prod", "", "my-api-v2", "abc", 12, "prod_my-api-v2-abc-12"},
		{"i-1", "", "a", "h", 3, "i-1_a-h-3"},
		{"i_x", "", "a", "h", 3, "i_x_a-h-3"},
		// Any other namespace: INSTANCE_NAME.NS-HASH-N.
		{"default", "team", "web", "5d8f7c9b6", 0, "default_web.team-5d8f7c9b6-0"},
		{"i_x", "ns-1", "my-api", "abc", 7, "i_x_my-api.ns-1-abc-7"},
	}
	for _, tt := range tests {
		got := ContainerName(tt.instance, tt.namespace, tt.deployment, tt.hash, tt.ordinal)
		if got != tt.want {
			t.Errorf("ContainerName = %q, want %q", got, tt.want)
		}
		wantNS := tt.namespace
		if wantNS == "" {
			wantNS = "default"
		}
		for _, name := range []string{got, "/" + got} {
			i, ns, d, h, o, ok := parseContainerName(name)
			if !ok || i != tt.instance || ns != wantNS || d != tt.deployment || h != tt.hash || o != tt.ordinal {
				t.Errorf("parseContainerName(%q) = %q %q %q %q %d %v", name, i, ns, d, h, o, ok)
			}
		}
	}
}

// Two deployments of one name in two namespaces, or two namespaces of one
// instance, never get one container name; nor do two instances.
func TestContainerNameDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, inst := range []string{"a", "a_b", "b"} {
		for _, ns := range []string{"default", "b", "team", "web"} {
			for _, dep := range []string{"web", "b", "team", "a-b"} {
				name := ContainerName(inst, ns, dep, "h1", 0)
				who := inst + "|" + ns + "|" + dep
				if prev, ok := seen[name]; ok {
					t.Errorf("%s and %s both get %q", prev, who, name)
				}
				seen[name] = who
			}
		}
	}
}

func TestParseContainerNameRejects(t *testing.T) {
	for _, name := range []string{
		"", "web-abc-0", "_web-abc-0", "default_web", "default_web-0",
		"default_-abc-0", "default_web--0", "default_web-abc-", "default_web-abc-x",
		"default_web-abc--1", "default_web-abc-01", "default_web-abc-+1",
		"default_web.-abc-0", "default_.team-abc-0", "default_web.team.x-abc-0",
	} {
		if _, _, _, _, _, ok := parseContainerName(name); ok {
			t.Errorf("parseContainerName(%q) ok, want rejection", name)
		}
	}
}

func TestParseNamespace(t *testing.T) {
	labels := func(ns string) map[string]string {
		l := map[string]string{LabelInstance: "i", LabelDeployment: "web"}
		if ns != "" {
			l[LabelNamespace] = ns
		}
		return l
	}
	tests := []struct {
		name   string
		labels map[string]string
		cname  string
		want   string
	}{
		{"no label: an earlier release's", labels(""), "i_web-h-0", "default"},
		{"default", labels("default"), "i_web-h-0", "default"},
		{"namespaced replica", labels("team"), "i_web.team-h-0", "team"},
		{"namespaced member, docker's leading slash", labels("team"), "/i_web.team-h-0.app", "team"},
		{"namespaced volume", labels("team"), "i_web.team-h-0.data.1a2b3c4d", "team"},
		// A template label copied by a release that did not reserve it:
		// the name says the replica is default's.
		{"template label on a default replica", labels("team"), "i_web-h-0", "default"},
		{"template label on a default member", labels("team"), "i_web-h-0.app", "default"},
		{"other instance's prefix", labels("team"), "j_web.team-h-0", "default"},
		// Objects of no deployment (helpers, networks) have only the label.
		{"helper", map[string]string{LabelInstance: "i", LabelNamespace: "team"}, "i_web.team_svc", "team"},
		{"nothing", nil, "", "default"},
	}
	for _, tt := range tests {
		if got := ParseNamespace(tt.labels, tt.cname); got != tt.want {
			t.Errorf("%s: ParseNamespace(%v, %q) = %q, want %q", tt.name, tt.labels, tt.cname, got, tt.want)
		}
	}
}

// parseContainerName is the inverse of ContainerName; it exists to show
// that ContainerName is unambiguous. ok is false for a name
// ContainerName cannot have produced (a leading "/" as Docker reports names
// is accepted).
func parseContainerName(name string) (instance, namespace, deployment, hash string, ordinal int, ok bool) {
	name = strings.TrimPrefix(name, "/")
	i := strings.LastIndexByte(name, '_')
	if i <= 0 {
		return "", "", "", "", 0, false
	}
	instance, rest := name[:i], name[i+1:]
	i = strings.LastIndexByte(rest, '-')
	if i < 0 {
		return "", "", "", "", 0, false
	}
	ordStr := rest[i+1:]
	rest = rest[:i]
	ordinal, err := strconv.Atoi(ordStr)
	// Reject "+1", "-1" and "01": only the canonical form round-trips.
	if err != nil || ordinal < 0 || strconv.Itoa(ordinal) != ordStr {
		return "", "", "", "", 0, false
	}
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 || j == len(rest)-1 {
		return "", "", "", "", 0, false
	}
	deployment, hash = rest[:j], rest[j+1:]
	namespace = "default"
	if d, ns, found := strings.Cut(deployment, "."); found {
		if d == "" || ns == "" || ns == "default" || strings.Contains(ns, ".") {
			return "", "", "", "", 0, false
		}
		deployment, namespace = d, ns
	}
	if strings.Contains(hash, ".") {
		return "", "", "", "", 0, false
	}
	return instance, namespace, deployment, hash, ordinal, true
}

// A port-forward helper's name says which pod it forwards to; nothing
// else parses as one.
func TestPortForwardHelperName(t *testing.T) {
	if got := PortForwardHelperName("my_inst", "", "web-5d8f-0", "1a2b3c"); got != "my_inst_web-5d8f-0.default_pf-1a2b3c" {
		t.Errorf("name %q", got)
	}
	for _, tt := range []struct{ instance, namespace, name, pod string }{
		{"my_inst", "default", "my_inst_web-5d8f-0.default_pf-1a2b3c", "web-5d8f-0"},
		{"my_inst", "", "/my_inst_web-5d8f-0.default_pf-1a2b3c", "web-5d8f-0"},
		{"i", "shop", "i_db-0.shop_pf-0a0b0c", "db-0"},
		{"i", "default", "i_db-0.shop_pf-0a0b0c", ""},  // another namespace's
		{"j", "shop", "i_db-0.shop_pf-0a0b0c", ""},     // another instance's
		{"i", "shop", "i_web-abc-0.shop-abc-0", ""},    // a replica
		{"i", "shop", "i_.shop_pf-0a0b0c", ""},         // no pod
		{"i", "shop", "i_a.b.shop_pf-0a0b0c", ""},      // no pod name has a dot
		{"i", "shop", "i_web.shop_pf-0a0b0c_pf-1", ""}, // the last _pf- ends the pod's part
	} {
		if got := PortForwardHelperPod(tt.instance, tt.namespace, tt.name); got != tt.pod {
			t.Errorf("PortForwardHelperPod(%q, %q, %q) = %q, want %q", tt.instance, tt.namespace, tt.name, got, tt.pod)
		}
	}
}

// A Deployment's replica is pod DEPLOYMENT-HASH-N, or the pod its holder
// pod's containers name; any other owner's container is named after its
// pod; a name of neither form is no pod's.
func TestPodOfNamesADeploymentsReplicaAndAnyOtherPod(t *testing.T) {
	dep := func(ns, hash, pod string) map[string]string {
		l := map[string]string{LabelDeployment: "web", LabelNamespace: ns, LabelTemplateHash: hash}
		if pod != "" {
			l[LabelPod] = pod
		}
		return l
	}
	owned := map[string]string{LabelOwnerKind: "Job", LabelOwner: "batch"}
	tests := []struct {
		name, ns, base string
		labels         map[string]string
		kind, owner    string
		pod            string
		ok             bool
	}{
		{"replica of the default namespace", "default", "i_web-abc-2", dep("default", "abc", ""), "Deployment", "web", "web-abc-2", true},
		{"replica of another namespace", "team", "i_web.team-abc-0", dep("team", "abc", ""), "Deployment", "web", "web-abc-0", true},
		{"holder pod", "default", "i_web-abc-1", dep("default", "abc", "web-abc-1"), "Deployment", "web", "web-abc-1", true},
		{"replica of another hash than its label's", "default", "i_web-abd-2", dep("default", "abc", ""), "Deployment", "web", "", false},
		{"replica of another namespace's name", "team", "i_web-abc-2", dep("team", "abc", ""), "Deployment", "web", "", false},
		{"replica without ordinal", "default", "i_web-abc-x", dep("default", "abc", ""), "Deployment", "web", "", false},
		{"another owner's pod", "default", PodContainerName("i", "default", "batch-x1"), owned, "Job", "batch", "batch-x1", true},
		{"another owner's container named as a replica", "default", "i_web-abc-2", owned, "Job", "batch", "", false},
		{"no owner", "default", "i_web-abc-2", map[string]string{}, "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if kind, owner := OwnerOf(tt.labels); kind != tt.kind || owner != tt.owner {
				t.Errorf("OwnerOf = %q %q, want %q %q", kind, owner, tt.kind, tt.owner)
			}
			if pod, ok := PodOf("i", tt.ns, tt.base, tt.labels); pod != tt.pod || ok != tt.ok {
				t.Errorf("PodOf(%q) = %q %v, want %q %v", tt.base, pod, ok, tt.pod, tt.ok)
			}
		})
	}
}
