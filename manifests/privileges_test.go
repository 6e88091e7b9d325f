package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrivileges(t *testing.T) {
	yes := true
	base := func(mut func(*Deployment)) *Deployment {
		d := &Deployment{Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{Containers: []Container{{Name: "c", Image: "i"}}}}}}
		mut(d)
		return d
	}
	hostPath := func(p string) func(*Deployment) {
		return func(d *Deployment) {
			d.Spec.Template.Spec.Volumes = []Volume{{Name: "v", HostPath: &HostPathVolumeSource{Path: p}}}
		}
	}
	tests := []struct {
		name string
		d    *Deployment
		want []string // "path flag"
	}{
		{"nothing", base(func(*Deployment) {}), nil},
		{"privileged", base(func(d *Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext = &SecurityContext{Privileged: &yes}
		}), []string{"spec.template.spec.containers[0].securityContext.privileged --allow-privileged"}},
		{"host namespaces", base(func(d *Deployment) { d.Spec.Template.Spec.HostNetwork, d.Spec.Template.Spec.HostPID = true, true }),
			[]string{"spec.template.spec.hostNetwork --allow-host-namespaces", "spec.template.spec.hostPID --allow-host-namespaces"}},
		{"plain host path", base(hostPath("/srv/data")), []string{"spec.template.spec.volumes[0].hostPath.path --allow-host-path"}},
		{"root", base(hostPath("/")), []string{"spec.template.spec.volumes[0].hostPath.path --allow-host-path", "spec.template.spec.volumes[0].hostPath.path --allow-host-root"}},
		{"the socket, disguised", base(hostPath("/var/run/../run/./docker.sock")), []string{"spec.template.spec.volumes[0].hostPath.path --allow-host-path", "spec.template.spec.volumes[0].hostPath.path --allow-host-root"}},
		{"a parent of the socket", base(hostPath("/var/run/")), []string{"spec.template.spec.volumes[0].hostPath.path --allow-host-path", "spec.template.spec.volumes[0].hostPath.path --allow-host-root"}},
		{"a sibling of the socket", base(hostPath("/var/runner")), []string{"spec.template.spec.volumes[0].hostPath.path --allow-host-path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range Privileges(tt.d, nil) {
				got = append(got, p.Path+" "+p.Flag)
				if !strings.Contains(p.String(), p.Flag) {
					t.Errorf("message %q does not name the flag", p.String())
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A symbolic link to / is judged by what it names.
func TestPrivilegesResolveLinks(t *testing.T) {
	link := filepath.Join(t.TempDir(), "innocent")
	if err := os.Symlink("/", link); err != nil {
		t.Fatal(err)
	}
	d := &Deployment{Spec: DeploymentSpec{Template: PodTemplateSpec{Spec: PodSpec{
		Containers: []Container{{Name: "c", Image: "i"}},
		Volumes:    []Volume{{Name: "v", HostPath: &HostPathVolumeSource{Path: link}}},
	}}}}
	ps := Privileges(d, EvalSymlinks)
	if len(ps) != 2 || ps[1].Flag != FlagAllowHostRoot {
		t.Fatalf("a link to / should need %s: %v", FlagAllowHostRoot, ps)
	}
}
