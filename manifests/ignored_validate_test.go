package manifests

import "testing"

// The ignored fields are decoded against Kubernetes' types only: their
// values are never put through Kubernetes' validation, so dockctl accepts
// manifests that a cluster refuses (ValidatePodSpec: terminationMessagePolicy
// must be File or FallbackToLogsOnError; serviceAccountName,
// priorityClassName are DNS subdomains; a toleration's
// operator is Exists or Equal, and Exists takes no value; nodeSelector keys
// are qualified names; preemptionPolicy is PreemptLowerPriority or Never).
// docs/design.md §1: whatever dockctl accepts, a cluster accepts too.
func TestIgnoredFieldsValidatedAsKubernetes(t *testing.T) {
	tests := []struct{ name, input string }{
		{"terminationMessagePolicy", edit(t, "        image: nginx:1.25\n", "        image: nginx:1.25\n        terminationMessagePolicy: Sometimes\n")},
		{"serviceAccountName", podBase("      serviceAccountName: Not_A_Name\n")},
		{"priorityClassName", podBase("      priorityClassName: \"High Priority\"\n")},
		{"toleration operator", podBase("      tolerations:\n      - {key: a, operator: Sometimes}\n")},
		{"toleration Exists with value", podBase("      tolerations:\n      - {key: a, operator: Exists, value: b}\n")},
		{"nodeSelector key", podBase("      nodeSelector: {\"bad key!\": x}\n")},
		{"preemptionPolicy", podBase("      preemptionPolicy: Always\n")},
		{"topologySpreadConstraints maxSkew", podBase("      topologySpreadConstraints:\n      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode("t.yaml", []byte(tt.input)); err == nil {
				t.Errorf("accepted; Kubernetes' validation refuses this %s", tt.name)
			}
		})
	}
}

// Vice versa: the values Kubernetes' validation accepts apply. It has no
// rule for schedulerName (ValidatePodSpec checks none: a pod naming a
// scheduler that does not exist stays Pending), and an empty
// terminationMessagePolicy is defaulted to File.
func TestIgnoredFieldsAcceptedAsKubernetes(t *testing.T) {
	tests := []struct{ name, input string }{
		{"schedulerName", podBase("      schedulerName: My_Scheduler\n")},
		{"terminationMessagePolicy empty", edit(t, "        image: nginx:1.25\n", "        image: nginx:1.25\n        terminationMessagePolicy: \"\"\n")},
		{"terminationMessagePolicy FallbackToLogsOnError", edit(t, "        image: nginx:1.25\n", "        image: nginx:1.25\n        terminationMessagePolicy: FallbackToLogsOnError\n")},
		{"toleration matching every taint", podBase("      tolerations:\n      - {operator: Exists}\n")},
		{"toleration without operator (Equal)", podBase("      tolerations:\n      - {key: a, value: b, effect: PreferNoSchedule}\n")},
		{"serviceAccountName wins over serviceAccount", podBase("      serviceAccountName: web\n      serviceAccount: Not_Used\n")},
		{"nodeSelector qualified key", podBase("      nodeSelector: {kubernetes.io/os: linux}\n")},
		{"preemptionPolicy Never", podBase("      preemptionPolicy: Never\n")},
		{"preferred node affinity may name any value", podBase("      affinity:\n        nodeAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 100\n            preference: {matchExpressions: [{key: zone, operator: In, values: [\"not a label value\"]}]}\n")},
		{"pod affinity", podBase("      affinity:\n        podAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n          - weight: 1\n            podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash]}\n")},
		{"topology spread", podBase("      topologySpreadConstraints:\n      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, minDomains: 2, nodeAffinityPolicy: Honor, nodeTaintsPolicy: Ignore, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [pod-template-hash]}\n      - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode("t.yaml", []byte(tt.input)); err != nil {
				t.Errorf("refused; Kubernetes' validation accepts this %s: %v", tt.name, err)
			}
		})
	}
}

// Vice versa: Kubernetes defaults an empty dnsPolicy to ClusterFirst
// (SetDefaults_PodSpec), so `dnsPolicy: ""` (a chart rendering an empty
// value in quotes) applies to a cluster; dockctl refuses it as not
// ClusterFirst.
func TestEmptyDNSPolicyIsClusterFirst(t *testing.T) {
	if _, err := Decode("t.yaml", []byte(podBase("      dnsPolicy: \"\"\n"))); err != nil {
		t.Errorf("dnsPolicy \"\" (ClusterFirst by Kubernetes' defaulting) refused: %v", err)
	}
}
