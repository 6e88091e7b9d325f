package manifests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// workloadFiles returns the realistic workload manifests of
// testdata/workloads, by file name.
func workloadFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "workloads", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workload manifests: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

func decodeWorkloadsOK(t *testing.T, file, in string) []*Document {
	t.Helper()
	docs, err := DecodeWorkloads(file, []byte(in))
	if err != nil {
		t.Fatalf("DecodeWorkloads: %v", err)
	}
	return docs
}

// What apply reads (Decode, DecodeAll, LoadAll) decodes every workload
// kind, StatefulSet included, as DecodeWorkloads does.
func TestApplyDecodesEveryWorkloadKind(t *testing.T) {
	for f, b := range workloadFiles(t) {
		want, err := DecodeWorkloads(f, b)
		if err != nil {
			t.Fatalf("DecodeWorkloads(%s): %v", f, err)
		}
		docs, err := Decode(f, b)
		if err != nil || len(docs) != len(want) {
			t.Errorf("Decode(%s) = %d docs, %v; want %d", f, len(docs), err, len(want))
			continue
		}
		for i := range docs {
			if docs[i].Kind() != want[i].Kind() {
				t.Errorf("Decode(%s)[%d] = %s, want %s", f, i, docs[i].Kind(), want[i].Kind())
			}
		}
	}
}

func TestDecodeWorkloadsRealManifests(t *testing.T) {
	want := map[string][]string{
		"backup-cronjob.yaml":          {KindCronJob},
		"helm-hook-job.yaml":           {KindJob},
		"helm-test-pod.yaml":           {KindPod},
		"indexed-job.yaml":             {KindJob},
		"node-exporter-daemonset.yaml": {KindDaemonSet},
		"postgres-statefulset.yaml":    {KindService, KindStatefulSet},
		"replicaset.yaml":              {KindReplicaSet},
	}
	files := workloadFiles(t)
	if len(files) != len(want) {
		t.Errorf("%d workload manifests, the test knows %d", len(files), len(want))
	}
	for f, b := range files {
		docs := decodeWorkloadsOK(t, f, string(b))
		var kinds []string
		for _, d := range docs {
			kinds = append(kinds, d.Kind())
			if d.Meta().Name == "" {
				t.Errorf("%s: %s without a name", f, d.Kind())
			}
		}
		if w := want[filepath.Base(f)]; !reflect.DeepEqual(kinds, w) {
			t.Errorf("%s: kinds %v, want %v", f, kinds, w)
		}
	}
	// What each carries through, and its ignored fields.
	docs := decodeWorkloadsOK(t, "pg.yaml", string(files[filepath.Join("testdata", "workloads", "postgres-statefulset.yaml")]))
	ss := docs[1].StatefulSet
	if ss.Spec.ServiceName != "postgresql-hl" || len(ss.Spec.VolumeClaimTemplates) != 1 || ss.Spec.VolumeClaimTemplates[0].Metadata.Name != "data" {
		t.Errorf("StatefulSet: serviceName %q, claim templates %+v", ss.Spec.ServiceName, ss.Spec.VolumeClaimTemplates)
	}
	if got := strings.Join(docs[1].Ignored, " "); got != "spec.template.spec.serviceAccountName spec.template.spec.automountServiceAccountToken spec.template.spec.affinity" {
		t.Errorf("StatefulSet ignored fields: %s", got)
	}
	if docs[1].Meta().Namespace != "db" {
		t.Errorf("namespace %q", docs[1].Meta().Namespace)
	}
}

// A workload in a List, and two of one kind and name, are handled as for
// every kind: items decoded, duplicates refused.
func TestDecodeWorkloadsListsAndDuplicates(t *testing.T) {
	job := "apiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox:1.36}]\n"
	list := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(job, "\n"), "\n", "\n  ") + "\n"
	docs := decodeWorkloadsOK(t, "l.yaml", list)
	if len(docs) != 1 || docs[0].Job == nil {
		t.Fatalf("List of a Job: %d documents", len(docs))
	}
	_, err := DecodeWorkloads("d.yaml", []byte(job+"---\n"+job))
	if err == nil || !strings.Contains(err.Error(), `d.yaml:12: metadata.name: duplicate job "once" (first defined at d.yaml:3)`) {
		t.Errorf("two Jobs of one name: %v", err)
	}
}

// TestWorkloadsDecodeStrictlyIntoKubernetesTypes holds docs/design.md §8's
// first rule for the workload kinds: every manifest DecodeWorkloads accepts
// decodes strictly (no unknown or duplicate field) into k8s.io/api's type,
// as written and as dockctl holds it once defaulted, and both sides read
// the same pod template.
func TestWorkloadsDecodeStrictlyIntoKubernetesTypes(t *testing.T) {
	inputs := map[string]string{}
	for f, b := range workloadFiles(t) {
		inputs[f] = string(b)
	}
	for _, tc := range workloadValidationCases {
		if len(tc.errs) == 0 {
			inputs[tc.name] = tc.in
		}
	}
	for name, in := range inputs {
		docs := decodeWorkloadsOK(t, name, in)
		raws := yamlDocuments(t, in)
		if len(raws) != len(docs) {
			t.Fatalf("%s: %d YAML documents, %d decoded", name, len(raws), len(docs))
		}
		for i, d := range docs {
			w := d.workload()
			if w == nil {
				continue
			}
			written, held := k8sWorkload(t, w.WorkloadKind()), k8sWorkload(t, w.WorkloadKind())
			if err := sigsyaml.UnmarshalStrict(raws[i], written); err != nil {
				t.Errorf("%s: as written, not a Kubernetes %s: %v", name, w.WorkloadKind(), err)
				continue
			}
			out, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			strictJSON(t, out, held)
			tmpl, _ := w.PodTemplate()
			for how, obj := range map[string]any{"as written": written, "defaulted": held} {
				samePod(t, name+" "+how, k8sPodSpec(obj), &tmpl.Spec)
			}
		}
	}
}

func k8sWorkload(t *testing.T, kind string) any {
	t.Helper()
	switch kind {
	case KindStatefulSet:
		return &appsv1.StatefulSet{}
	case KindDaemonSet:
		return &appsv1.DaemonSet{}
	case KindReplicaSet:
		return &appsv1.ReplicaSet{}
	case KindJob:
		return &batchv1.Job{}
	case KindCronJob:
		return &batchv1.CronJob{}
	case KindPod:
		return &corev1.Pod{}
	}
	t.Fatalf("no Kubernetes type for %s", kind)
	return nil
}

func k8sPodSpec(obj any) *corev1.PodSpec {
	switch o := obj.(type) {
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.Spec
	case *batchv1.Job:
		return &o.Spec.Template.Spec
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec
	case *corev1.Pod:
		return &o.Spec
	}
	return nil
}

// A StatefulSet's and a DaemonSet's revision is the Deployment's template
// hash of the same template (docs/design.md §8's hash rules hold for them
// by construction), and the fields ignored on one host stay out of it.
func TestWorkloadRevisionIsTheDeploymentTemplateHash(t *testing.T) {
	template := `  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]
`
	dep := decodeOne(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n"+template)
	ss := decodeWorkloadsOK(t, "s.yaml", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec:\n  serviceName: web\n  selector: {matchLabels: {app: web}}\n"+template)[0].StatefulSet
	ds := decodeWorkloadsOK(t, "d.yaml", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n"+template)[0].DaemonSet
	ignored := strings.Replace(template, "    spec:\n", "    spec:\n      nodeSelector: {kubernetes.io/os: linux}\n      serviceAccountName: web\n", 1)
	ssIgnored := decodeWorkloadsOK(t, "s.yaml", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n"+ignored)[0].StatefulSet
	want := dep.TemplateHash()
	for name, got := range map[string]string{"StatefulSet": ss.TemplateHash(), "DaemonSet": ds.TemplateHash(), "StatefulSet with ignored fields": ssIgnored.TemplateHash()} {
		if got != want {
			t.Errorf("%s revision %s, Deployment's template hash %s", name, got, want)
		}
	}
}

// Every kind's pod template passes the Deployment's gates, each privilege
// under its own path in the object.
func TestTemplatePrivilegesOfEveryWorkloadKind(t *testing.T) {
	tmpl := func(indent string) string {
		return strings.ReplaceAll("template:\n  metadata: {labels: {app: a}}\n  spec:\n    hostNetwork: true\n    restartPolicy: RP\n    containers: [{name: c, image: busybox:1.36}]\n", "\n", "\n"+indent)
	}
	for _, tc := range []struct {
		in, path string
	}{
		{"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}\nspec:\n  selector: {matchLabels: {app: a}}\n  " + tmpl("  "), "spec.template.spec.hostNetwork"},
		{"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: a}\nspec:\n  selector: {matchLabels: {app: a}}\n  " + tmpl("  "), "spec.template.spec.hostNetwork"},
		{"apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: a}\nspec:\n  selector: {matchLabels: {app: a}}\n  " + tmpl("  "), "spec.template.spec.hostNetwork"},
		{strings.ReplaceAll("apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec:\n  "+tmpl("  "), "RP", "Never"), "spec.template.spec.hostNetwork"},
		{strings.ReplaceAll("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: a}\nspec:\n  schedule: '@hourly'\n  jobTemplate:\n    spec:\n      "+tmpl("      "), "RP", "Never"), "spec.jobTemplate.spec.template.spec.hostNetwork"},
		{"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  hostNetwork: true\n  restartPolicy: Never\n  containers: [{name: c, image: busybox:1.36}]\n", "spec.hostNetwork"},
	} {
		in := strings.ReplaceAll(tc.in, "RP", "Always")
		docs := decodeWorkloadsOK(t, "p.yaml", in)
		w := docs[0].workload()
		tp, base := w.PodTemplate()
		got := TemplatePrivileges(tp, base, Host{})
		if len(got) != 1 || got[0].Path != tc.path || got[0].Flag != FlagAllowHostNamespaces {
			t.Errorf("%s: privileges %+v, want one %s at %s", w.WorkloadKind(), got, FlagAllowHostNamespaces, tc.path)
		}
		if refused := (Policy{}).RefusedTemplate(tp, base); len(refused) != 1 {
			t.Errorf("%s: the default policy refuses %+v", w.WorkloadKind(), refused)
		}
		if refused := (Policy{HostNamespaces: true}).RefusedTemplate(tp, base); len(refused) != 0 {
			t.Errorf("%s: %s still refuses %+v", w.WorkloadKind(), FlagAllowHostNamespaces, refused)
		}
	}
}

// FuzzDecodeWorkloads: no input panics DecodeWorkloads, and what it
// accepts of a workload kind has a pod template that hashes, with every
// privilege it needs under a path of the object.
func FuzzDecodeWorkloads(f *testing.F) {
	for _, s := range []string{stsBase, dsBase, rsBase, jobBase, cronBase, standalonePodBase,
		with(cronBase, `"0 3 * * *"`, `"TZ=UTC"`), with(cronBase, `"0 3 * * *"`, `"@every 1h"`)} {
		f.Add([]byte(s))
	}
	if files, err := filepath.Glob(filepath.Join("testdata", "workloads", "*.yaml")); err == nil {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, err := DecodeWorkloads("f.yaml", data)
		if err != nil {
			return
		}
		for _, d := range docs {
			w := d.workload()
			if w == nil {
				continue
			}
			tp, base := w.PodTemplate()
			if len(TemplateHash(tp)) != HashLength {
				t.Fatalf("%s: template hash %q", w.WorkloadKind(), TemplateHash(tp))
			}
			for _, p := range TemplatePrivileges(tp, base, Host{}) {
				if base != "" && !strings.HasPrefix(p.Path, base+".") {
					t.Fatalf("%s: privilege at %s, outside %s", w.WorkloadKind(), p.Path, base)
				}
			}
		}
	})
}

// The revisions of the realistic StatefulSet and DaemonSet are pinned: once
// their controllers store revisions, a change here would replace every pod
// of every such workload on upgrade (docs/design.md §7 and §16). Changing
// a pinned hash is changing the hash rules.
func TestWorkloadRevisionGolden(t *testing.T) {
	files := workloadFiles(t)
	for _, tc := range []struct{ file, want string }{
		{"postgres-statefulset.yaml", "40afe96edf"},
		{"node-exporter-daemonset.yaml", "171dba8206"},
	} {
		f := filepath.Join("testdata", "workloads", tc.file)
		for _, d := range decodeWorkloadsOK(t, f, string(files[f])) {
			var got string
			switch {
			case d.StatefulSet != nil:
				got = d.StatefulSet.TemplateHash()
			case d.DaemonSet != nil:
				got = d.DaemonSet.TemplateHash()
			default:
				continue
			}
			if got != tc.want {
				t.Errorf("%s: revision %s, pinned %s", tc.file, got, tc.want)
			}
		}
	}
}

// A pod template's metadata.name (Helm charts set it) applies, as
// Kubernetes accepts it (ValidatePodTemplateSpec checks only labels and
// annotations) and names no pod by it: it is ignored and named in apply's
// warning, and the template hash is that of the same template without it.
func TestTemplateNameIsAcceptedAndIgnored(t *testing.T) {
	template := func(name string) string {
		return "  template:\n    metadata:\n" + name + "      labels: {app: web}\n    spec:\n      containers: [{name: web, image: nginx:1.27}]\n"
	}
	withName := "      name: web-pod\n"
	tests := []struct{ kind, head string }{
		{"Deployment", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n"},
		{"StatefulSet", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web}\nspec:\n  serviceName: web\n  selector: {matchLabels: {app: web}}\n"},
		{"DaemonSet", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n"},
		{"ReplicaSet", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			named, err := DecodeWorkloads("t.yaml", []byte(tt.head+template(withName)))
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			plain, err := DecodeWorkloads("t.yaml", []byte(tt.head+template("")))
			if err != nil {
				t.Fatal(err)
			}
			if h, wh := TemplateHash(docTemplate(named[0])), TemplateHash(docTemplate(plain[0])); h != wh {
				t.Errorf("template hash %s, without the name %s", h, wh)
			}
			if warn := IgnoredWarning(named); !strings.Contains(warn, "/web (name)") {
				t.Errorf("warning %q names no ignored template name", warn)
			}
		})
	}
	if _, err := Decode("t.yaml", []byte(tests[0].head+template("      name: [web]\n"))); err == nil {
		t.Error("a template name that is no string applied; Kubernetes' type refuses it")
	}
}

// docTemplate is the pod template of d's Deployment or workload.
func docTemplate(d *Document) *PodTemplateSpec {
	if d.Deployment != nil {
		return &d.Deployment.Spec.Template
	}
	t, _ := d.workload().PodTemplate()
	return t
}
