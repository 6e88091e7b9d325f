package manifests

import (
	"reflect"
	"strings"
	"testing"
)

// TestDecodeImagePullSecrets: spec.imagePullSecrets decodes as Kubernetes'
// list of LocalObjectReference (names only; any name accepted, as the API
// server does), stays out of the template hash when absent, and is part
// of it when present (a change rolls out, as in Kubernetes).
func TestDecodeImagePullSecrets(t *testing.T) {
	withSecrets := func(list string) string {
		return edit(t, "    spec:\n      containers:\n", "    spec:\n      imagePullSecrets:\n"+list+"      containers:\n")
	}
	tests := []struct {
		name    string
		doc     string
		want    []LocalObjectReference
		wantErr string
	}{
		{name: "absent", doc: base},
		{name: "names in order", doc: withSecrets("      - name: regcred\n      - name: other\n"),
			want: []LocalObjectReference{{Name: "regcred"}, {Name: "other"}}},
		{name: "empty entry accepted", doc: withSecrets("      - {}\n"), want: []LocalObjectReference{{}}},
		{name: "only name may be set", doc: withSecrets("      - name: regcred\n        namespace: other\n"),
			wantErr: `spec.template.spec.imagePullSecrets[0]: unknown field "namespace"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Decode("m.yaml", []byte(tt.doc))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decode error = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := docs[0].Deployment.Spec.Template.Spec.ImagePullSecrets
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ImagePullSecrets = %+v, want %+v", got, tt.want)
			}
		})
	}
	plain, err := Decode("m.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	with, err := Decode("m.yaml", []byte(withSecrets("      - name: regcred\n")))
	if err != nil {
		t.Fatal(err)
	}
	if plain[0].Deployment.TemplateHash() == with[0].Deployment.TemplateHash() {
		t.Errorf("imagePullSecrets does not change the template hash")
	}
}
