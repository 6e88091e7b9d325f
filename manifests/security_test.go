package manifests

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// podBase is base with a pod-level block appended after the containers
// (line 20 on).
func podBase(podLevel string) string { return base + podLevel }

func TestSecurityValidation(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // nil: valid
	}{
		{"every supported pod field", podBase(`      securityContext:
        runAsUser: 1000
        runAsGroup: 3000
        runAsNonRoot: true
        supplementalGroups: [4000, 4001]
        fsGroup: 2000
        seccompProfile: {type: RuntimeDefault}
        sysctls:
        - {name: net.ipv4.ip_local_port_range, value: "1024 65000"}
        - {name: kernel.shm_rmid_forced, value: "1"}
      hostAliases:
      - ip: 10.1.2.3
        hostnames: [foo.local, bar.local]
      dnsConfig:
        nameservers: [1.1.1.1]
        searches: [example.com.]
        options:
        - name: ndots
          value: "2"
        - name: edns0
`), nil},
		{"every supported container field", edit(t, "        image: nginx:1.25\n", `        image: nginx:1.25
        workingDir: /srv
        stdin: true
        stdinOnce: true
        tty: true
        resources:
          limits: {nvidia.com/gpu: 2}
        securityContext:
          runAsUser: 1000
          runAsGroup: 1000
          runAsNonRoot: true
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
          seccompProfile: {type: RuntimeDefault}
`), nil},
		{"ids out of range", podBase(`      securityContext:
        runAsUser: -1
        runAsGroup: 2147483648
        fsGroup: -5
        supplementalGroups: [1, -2]
`), []string{
			"t.yaml:21: spec.template.spec.securityContext.runAsUser: must be between 0 and 2147483647, inclusive",
			"t.yaml:22: spec.template.spec.securityContext.runAsGroup: must be between 0 and 2147483647, inclusive",
			"t.yaml:23: spec.template.spec.securityContext.fsGroup: must be between 0 and 2147483647, inclusive",
			"t.yaml:24: spec.template.spec.securityContext.supplementalGroups[1]: must be between 0 and 2147483647, inclusive",
		}},
		{"seccomp", podBase(`      securityContext:
        seccompProfile: {type: RuntimeDefault, localhostProfile: x.json}
      initContainers:
      - name: a
        image: busybox
        securityContext: {seccompProfile: {type: Localhost, localhostProfile: /abs/a.json}}
      - name: b
        image: busybox
        securityContext: {seccompProfile: {type: Strict}}
      - name: c
        image: busybox
        securityContext: {seccompProfile: {type: Localhost}}
      - name: d
        image: busybox
        securityContext: {seccompProfile: {type: Localhost, localhostProfile: ../x.json}}
      - name: e
        image: busybox
        securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/ok.json}}
`), []string{
			"t.yaml:21: spec.template.spec.securityContext.seccompProfile.localhostProfile: can only be set when seccomp type is Localhost",
			"t.yaml:25: spec.template.spec.initContainers[0].securityContext.seccompProfile.localhostProfile: must be a relative path",
			`t.yaml:28: spec.template.spec.initContainers[1].securityContext.seccompProfile.type: unsupported value "Strict": must be "RuntimeDefault", "Unconfined" or "Localhost"`,
			"t.yaml:31: spec.template.spec.initContainers[2].securityContext.seccompProfile.localhostProfile: must be set when seccomp type is Localhost",
			"t.yaml:34: spec.template.spec.initContainers[3].securityContext.seccompProfile.localhostProfile: must not contain '..'",
		}},
		{"no_new_privs contradictions", edit(t, "        image: nginx:1.25\n", `        image: nginx:1.25
        securityContext:
          allowPrivilegeEscalation: false
          privileged: true
          capabilities: {add: [CAP_SYS_ADMIN]}
`), []string{
			"t.yaml:18: spec.template.spec.containers[0].securityContext: cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
			"t.yaml:18: spec.template.spec.containers[0].securityContext: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
		}},
		{"sysctls", podBase(`      hostNetwork: true
      securityContext:
        sysctls:
        - {name: net.core.somaxconn, value: "1024"}
        - {name: vm.swappiness, value: "1"}
        - {name: "Bad Name", value: "1"}
        - {name: kernel/shm_rmid_forced, value: "1"}
        - {name: kernel.shm_rmid_forced, value: "0"}
        - {name: "", value: "1"}
`), []string{
			"t.yaml:23: spec.template.spec.securityContext.sysctls[0].name: may not be specified when 'hostNetwork' is true",
			`t.yaml:24: spec.template.spec.securityContext.sysctls[1].name: unsupported value "vm.swappiness": not a namespaced sysctl, which no container may set (namespaced: net.*, fs.mqueue.*, kernel.msg*, kernel.sem, kernel.shm*)`,
			`t.yaml:25: spec.template.spec.securityContext.sysctls[2].name: invalid value "Bad Name": must have at most 253 characters and match regex ` + sysctlName.String(),
			`t.yaml:27: spec.template.spec.securityContext.sysctls[4].name: duplicate value "kernel.shm_rmid_forced"`,
			"t.yaml:28: spec.template.spec.securityContext.sysctls[5].name: required",
		}},
		{"hostname and subdomain name the pod in the cluster DNS", podBase(`      hostname: web-0
      subdomain: web
`), nil},
		{"hostname and subdomain are DNS labels", podBase(`      hostname: Web_0
      subdomain: a.b
`), []string{
			`t.yaml:20: spec.template.spec.hostname: invalid value "Web_0": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`t.yaml:21: spec.template.spec.subdomain: invalid value "a.b": must not contain dots`,
		}},
		{"hostAliases and dnsConfig", podBase(`      hostAliases:
      - ip: not-an-ip
        hostnames: [Bad_Host]
      - hostnames: [ok]
      dnsConfig:
        nameservers: [1.1.1.1, 1.0.0.1, 8.8.8.8, 9.9.9.9, nope]
        searches: [ok.example, bad_search]
        options: [{value: "1"}]
`), []string{
			`t.yaml:21: spec.template.spec.hostAliases[0].ip: invalid value "not-an-ip": must be a valid IP address`,
			`t.yaml:22: spec.template.spec.hostAliases[0].hostnames[0]: invalid value "Bad_Host": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"t.yaml:23: spec.template.spec.hostAliases[1].ip: required",
			"t.yaml:25: spec.template.spec.dnsConfig.nameservers: must not have more than 3 nameservers: [1.1.1.1 1.0.0.1 8.8.8.8 9.9.9.9 nope]",
			`t.yaml:25: spec.template.spec.dnsConfig.nameservers[4]: invalid value "nope": must be a valid IP address`,
			`t.yaml:26: spec.template.spec.dnsConfig.searches[1]: invalid value "bad_search": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"t.yaml:27: spec.template.spec.dnsConfig.options[0].name: required",
		}},
		{"gpu is a whole number, not overcommitted", edit(t, "        image: nginx:1.25\n", `        image: nginx:1.25
        resources:
          limits: {nvidia.com/gpu: 500m}
          requests: {nvidia.com/gpu: 1}
`), []string{
			"t.yaml:19: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: must be an integer",
			"t.yaml:20: spec.template.spec.containers[0].resources.requests[nvidia.com/gpu]: must be equal to nvidia.com/gpu limit of 500m",
		}},
		{"gpu request without limit", edit(t, "        image: nginx:1.25\n", `        image: nginx:1.25
        resources:
          requests: {nvidia.com/gpu: 1}
`), []string{
			"t.yaml:18: spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]: Limit must be set for non overcommitable resources",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				if len(docs) != 1 {
					t.Fatalf("got %d documents", len(docs))
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode succeeded, want:\n%s", strings.Join(tt.want, "\n"))
			}
			if got, want := err.Error(), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.ReplaceAll(got, "\n", "\n      "), strings.ReplaceAll(want, "\n", "\n      "))
			}
		})
	}
}

func TestEffectiveSecurityContext(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	yes, no := true, false
	ps := &PodSpec{SecurityContext: &PodSecurityContext{
		RunAsUser: i64(1000), RunAsGroup: i64(2000), RunAsNonRoot: &yes,
		SupplementalGroups: []int64{5, 6}, FSGroup: i64(7),
		SeccompProfile: &SeccompProfile{Type: SeccompRuntimeDefault},
	}}
	inherits := &Container{}
	got := EffectiveSecurityContext(ps, inherits)
	if *got.RunAsUser != 1000 || *got.RunAsGroup != 2000 || !*got.RunAsNonRoot || got.Seccomp.Type != SeccompRuntimeDefault {
		t.Errorf("container without its own context: %+v", got)
	}
	if !slices.Equal(got.SupplementalGroups, []int64{5, 6, 7}) {
		t.Errorf("supplementary groups = %v, want the pod's then fsGroup", got.SupplementalGroups)
	}
	overrides := &Container{SecurityContext: &SecurityContext{
		RunAsUser: i64(0), RunAsNonRoot: &no, AllowPrivilegeEscalation: &no,
		SeccompProfile: &SeccompProfile{Type: SeccompUnconfined},
	}}
	got = EffectiveSecurityContext(ps, overrides)
	if *got.RunAsUser != 0 || *got.RunAsGroup != 2000 || *got.RunAsNonRoot || got.Seccomp.Type != SeccompUnconfined || *got.AllowPrivilegeEscalation {
		t.Errorf("container's own context must win field by field: %+v", got)
	}
	// fsGroup already among the supplementary groups is not repeated.
	ps.SecurityContext.FSGroup = i64(5)
	if got := EffectiveSecurityContext(ps, inherits); !slices.Equal(got.SupplementalGroups, []int64{5, 6}) {
		t.Errorf("supplementary groups = %v, want [5 6]", got.SupplementalGroups)
	}
}

func TestSecurityPrivileges(t *testing.T) {
	d := decodeOne(t, podBase(`      securityContext:
        seccompProfile: {type: Unconfined}
        sysctls:
        - {name: net.ipv4.tcp_syncookies, value: "1"}
        - {name: net.core.somaxconn, value: "1024"}
      initContainers:
      - name: init
        image: busybox
        securityContext: {seccompProfile: {type: Unconfined}}
      - name: audit
        image: busybox
        securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json}}
`))
	var got []string
	for _, p := range Privileges(d, Host{}) {
		s := p.Path + " " + p.Flag
		if p.Value != "" {
			s += "=" + p.Value
		}
		got = append(got, s)
	}
	want := []string{
		"spec.template.spec.securityContext.seccompProfile.type --allow-privileged",
		"spec.template.spec.securityContext.sysctls[1] --allow-privileged",
		"spec.template.spec.initContainers[0].securityContext.seccompProfile.type --allow-privileged",
		"spec.template.spec.initContainers[1].securityContext.seccompProfile.localhostProfile --allow-host-path=/var/lib/kubelet/seccomp/profiles/audit.json",
	}
	if !slices.Equal(got, want) {
		t.Errorf("privileges:\n got %q\nwant %q", got, want)
	}
	if r := (Policy{Privileged: true, HostPaths: []string{"/var/lib/kubelet/seccomp"}}).Refused(d); len(r) != 0 {
		t.Errorf("--allow-privileged and --allow-host-path=/var/lib/kubelet/seccomp must allow them all, refused %v", r)
	}
	if r := (Policy{Privileged: true, HostPaths: []string{"/srv"}}).Refused(d); len(r) != 1 {
		t.Errorf("a host path prefix that does not cover the profile: refused %d, want 1", len(r))
	}
	if r := (Policy{}).Refused(d); len(r) != 4 {
		t.Errorf("without the flags: refused %d, want 4", len(r))
	}
	if got := LocalhostProfilePath("../../etc/shadow"); got != "/var/lib/kubelet/seccomp/etc/shadow" {
		t.Errorf("LocalhostProfilePath escapes the seccomp root: %s", got)
	}
}

func decodeOne(t *testing.T, in string) *Deployment {
	t.Helper()
	docs, err := Decode("t.yaml", []byte(in))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	return docs[0].Deployment
}

// The fields with no meaning on one host (docs/manifests.md): accepted,
// checked against Kubernetes' types, recorded for the warning, never
// stored, so that the template hash is the one of the same manifest
// without them.
func TestIgnoredFields(t *testing.T) {
	withIgnored := edit(t, "        image: nginx:1.25\n", `        image: nginx:1.25
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
`) + `      serviceAccountName: web
      serviceAccount: web
      automountServiceAccountToken: false
      nodeSelector: {disk: ssd}
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions: [{key: zone, operator: In, values: [a]}]
      tolerations:
      - {key: dedicated, operator: Equal, value: web, effect: NoExecute, tolerationSeconds: 30}
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      schedulerName: default-scheduler
      priorityClassName: high
      enableServiceLinks: false
      dnsPolicy: ClusterFirst
`
	docs, err := Decode("t.yaml", []byte(withIgnored))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	plain, err := Decode("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	wantIgnored := []string{
		"spec.template.spec.containers[0].terminationMessagePath",
		"spec.template.spec.containers[0].terminationMessagePolicy",
		"spec.template.spec.serviceAccountName", "spec.template.spec.serviceAccount",
		"spec.template.spec.automountServiceAccountToken", "spec.template.spec.nodeSelector",
		"spec.template.spec.affinity", "spec.template.spec.tolerations",
		"spec.template.spec.topologySpreadConstraints", "spec.template.spec.schedulerName",
		"spec.template.spec.priorityClassName",
	}
	if !slices.Equal(docs[0].Ignored, wantIgnored) {
		t.Errorf("Ignored:\n got %q\nwant %q", docs[0].Ignored, wantIgnored)
	}
	// enableServiceLinks is kept (it turns the Service variables off, read
	// at each container create) but, as it was once ignored, is left out of
	// the template hash: an upgrade rolls nothing out.
	if esl := docs[0].Deployment.Spec.Template.Spec.EnableServiceLinks; esl == nil || *esl {
		t.Errorf("enableServiceLinks: false not kept: %v", esl)
	}
	h1 := TemplateHash(&docs[0].Deployment.Spec.Template)
	h2 := TemplateHash(&plain[0].Deployment.Spec.Template)
	if h1 != h2 {
		t.Errorf("ignored fields or enableServiceLinks changed the template hash: %s vs %s", h1, h2)
	}
	stored, _ := json.Marshal(docs[0].Deployment)
	for _, f := range []string{"nodeSelector", "serviceAccount", "tolerations", "terminationMessage", "dnsPolicy"} {
		if strings.Contains(string(stored), f) {
			t.Errorf("%s is stored: %s", f, stored)
		}
	}
	w := IgnoredWarning(append(docs, plain...))
	want := "fields with no meaning on one host are ignored: deployment/web (affinity, automountServiceAccountToken, nodeSelector, priorityClassName, schedulerName, serviceAccount, serviceAccountName, terminationMessagePath, terminationMessagePolicy, tolerations, topologySpreadConstraints)"
	if w != want {
		t.Errorf("warning:\n got %s\nwant %s", w, want)
	}
	if w := IgnoredWarning(plain); w != "" {
		t.Errorf("no ignored field, yet warning %q", w)
	}
}

func TestIgnoredFieldsAreCheckedAsKubernetes(t *testing.T) {
	tests := []struct{ name, input, want string }{
		{"wrong type", podBase("      nodeSelector: [ssd]\n"),
			"t.yaml:20: spec.template.spec.nodeSelector: expected a mapping, got a list"},
		{"unknown field inside", podBase("      tolerations:\n      - {key: a, colour: red}\n"),
			`t.yaml:21: spec.template.spec.tolerations[0]: unknown field "colour"`},
		{"boolean as string", podBase("      automountServiceAccountToken: \"false\"\n"),
			`t.yaml:20: spec.template.spec.automountServiceAccountToken: expected a boolean, got string "false"`},
		// Kubernetes' value rules, in its own words, at the field's line.
		{"toleration operator", podBase("      tolerations:\n      - {key: a, operator: Sometimes}\n"),
			`t.yaml:21: spec.template.spec.tolerations[0].operator: Unsupported value: "Sometimes": supported values: "Equal", "Exists"`},
		{"preemptionPolicy", podBase("      preemptionPolicy: Always\n"),
			`t.yaml:20: spec.template.spec.preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"`},
		{"deprecated serviceAccount", podBase("      serviceAccount: Web\n"),
			`t.yaml:20: spec.template.spec.serviceAccount: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"affinity operator", podBase("      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n            - matchExpressions: [{key: zone, operator: Near, values: [a]}]\n"),
			`t.yaml:24: spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{"pod anti-affinity without topologyKey", podBase("      affinity:\n        podAntiAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchLabels: {app: web}}\n"),
			`t.yaml:23: spec.template.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty`},
		{"topology spread minDomains with ScheduleAnyway", podBase("      topologySpreadConstraints:\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway, minDomains: 2}\n"),
			`t.yaml:21: spec.template.spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway`},
		// A value that could not be decoded has its one error, not an
		// echo from the value rules.
		{"bad type, no echo", podBase("      topologySpreadConstraints:\n      - {maxSkew: many, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n"),
			`t.yaml:21: spec.template.spec.topologySpreadConstraints[0].maxSkew: expected an integer, got string "many"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("t.yaml", []byte(tt.input))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v\nwant %s", err, tt.want)
			}
		})
	}
}

// dnsPolicy as Kubernetes validates it; ClusterFirst (and
// ClusterFirstWithHostNet outside the host's network, the same there) is
// stored unset, so a template naming it hashes as one that does not — as
// earlier releases, which dropped the field, stored it.
func TestDNSPolicy(t *testing.T) {
	plain, err := Decode("t.yaml", []byte(podBase("")))
	if err != nil {
		t.Fatal(err)
	}
	want := TemplateHash(&plain[0].Deployment.Spec.Template)
	for _, tt := range []struct {
		name, input, err, stored string
	}{
		{"ClusterFirst", podBase("      dnsPolicy: ClusterFirst\n"), "", ""},
		{"empty", podBase("      dnsPolicy: \"\"\n"), "", ""},
		{"ClusterFirstWithHostNet without hostNetwork", podBase("      dnsPolicy: ClusterFirstWithHostNet\n"), "", ""},
		{"Default", podBase("      dnsPolicy: Default\n"), "", "Default"},
		{"None", podBase("      dnsPolicy: None\n      dnsConfig:\n        nameservers: [192.0.2.53]\n"), "", "None"},
		{"None without nameservers", podBase("      dnsPolicy: None\n      dnsConfig:\n        searches: [lan]\n"),
			"t.yaml:21: spec.template.spec.dnsConfig.nameservers: must provide at least one DNS nameserver when `dnsPolicy` is None", ""},
		{"None without dnsConfig", podBase("      dnsPolicy: None\n"),
			"t.yaml:20: spec.template.spec.dnsPolicy: must provide `dnsConfig` when `dnsPolicy` is None", ""},
		{"ClusterFirstWithHostNet in the host's network", podBase("      hostNetwork: true\n      dnsPolicy: ClusterFirstWithHostNet\n"),
			`t.yaml:21: spec.template.spec.dnsPolicy: unsupported by dockctl: "ClusterFirstWithHostNet" with hostNetwork (a container in the host's network uses the host's resolver: use "Default")`, ""},
		{"unknown", podBase("      dnsPolicy: Cluster\n"),
			`t.yaml:20: spec.template.spec.dnsPolicy: unsupported value "Cluster": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("t.yaml", []byte(tt.input))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error = %v\nwant %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ps := docs[0].Deployment.Spec.Template.Spec
			if ps.DNSPolicy != tt.stored {
				t.Errorf("stored dnsPolicy %q, want %q", ps.DNSPolicy, tt.stored)
			}
			if h := TemplateHash(&docs[0].Deployment.Spec.Template); (h == want) != (tt.stored == "" && ps.DNSConfig == nil) {
				t.Errorf("hash %s, plain template's %s", h, want)
			}
			if len(docs[0].Ignored) != 0 {
				t.Errorf("ignored %v: dnsPolicy is supported", docs[0].Ignored)
			}
		})
	}
}
