package manifests

import (
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// AcceptedFields is what the walk takes: for every mapping of every kind,
// each key of dockctl's type and of Kubernetes' is refused by the walk
// ("unknown field", "unsupported by dockctl") exactly when AcceptedFields
// leaves it out.
func TestAcceptedFieldsAreWhatTheWalkTakes(t *testing.T) {
	seen := map[reflect.Type]bool{}
	mappings := 0
	var check func(typ, k reflect.Type)
	check = func(typ, k reflect.Type) {
		st := k8sStruct(typ)
		if st == nil || seen[st] || st == quantityType || st == intOrStringType || st == timeType {
			return
		}
		seen[st] = true
		mappings++
		accepted := map[string]AcceptedField{}
		for _, f := range AcceptedFields(typ, k) {
			accepted[f.Name] = f
		}
		keys := map[string]bool{}
		for name := range jsonFields(st) {
			keys[name] = true
		}
		if ks := k8sStruct(k); ks != nil {
			for name := range jsonFields(ks) {
				keys[name] = true
			}
		}
		for name := range keys {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(name+": 1\n"), &doc); err != nil {
				t.Fatal(err)
			}
			w := &walker{lines: map[string]int{}}
			w.walk(doc.Content[0], reflect.New(st).Elem(), k, "")
			refused := false
			for _, e := range w.errs {
				refused = refused || e.Msg == "unsupported by dockctl" || strings.HasPrefix(e.Msg, "unknown field")
			}
			if _, ok := accepted[name]; ok == refused {
				t.Errorf("%v.%s: listed %t, refused by the walk %t (%v)", st, name, ok, refused, w.errs)
			}
		}
		for _, f := range accepted {
			if f.Type == nil || f.How == AcceptDecoded && f.K8s == nil {
				t.Errorf("%v.%s: type %v, Kubernetes' %v", st, f.Name, f.Type, f.K8s)
			}
			if f.How == AcceptDecoded {
				check(f.Type, f.K8s)
			}
		}
	}
	for _, ks := range KindSchemas() {
		check(ks.Type, ks.K8s)
	}
	if mappings < 50 {
		t.Fatalf("checked %d mappings only", mappings)
	}
	// The decoder's three ways, on the pod template.
	how := map[string]Acceptance{}
	for _, f := range AcceptedFields(reflect.TypeFor[PodSpec](), k8sChild(k8sChild(k8sChild(k8sDeployment, "spec"), "template"), "spec")) {
		how[f.Name] = f.How
	}
	if how["containers"] != AcceptDecoded || how["nodeSelector"] != AcceptIgnored {
		t.Errorf("pod spec: %v", how)
	}
	if _, ok := how["runtimeClassName"]; ok {
		t.Error("pod spec: runtimeClassName, which dockctl refuses, is listed")
	}
	var meta []string
	for _, f := range AcceptedFields(reflect.TypeFor[TemplateMeta](), k8sChild(k8sChild(k8sChild(k8sDeployment, "spec"), "template"), "metadata")) {
		if f.How == AcceptSkipped {
			meta = append(meta, f.Name)
		}
	}
	if got := strings.Join(meta, " "); got != "creationTimestamp generation managedFields ownerReferences resourceVersion selfLink uid" {
		t.Errorf("template metadata skipped: %s", got)
	}
}
