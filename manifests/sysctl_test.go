package manifests

import "testing"

// NormalizeSysctl is kubelet's NormalizeName: the slash form swaps '.'
// and '/', a dotted name is left as is.
func TestNormalizeSysctl(t *testing.T) {
	for in, want := range map[string]string{
		"net/ipv4/conf/eno2.100/rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"net.ipv4.conf.eno2/100.rp_filter": "net.ipv4.conf.eno2/100.rp_filter",
		"kernel/shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel.shm_rmid_forced":           "kernel.shm_rmid_forced",
		"kernel":                           "kernel",
		"":                                 "",
	} {
		if got := NormalizeSysctl(in); got != want {
			t.Errorf("NormalizeSysctl(%q) = %q, want %q", in, got, want)
		}
		if got := NormalizeSysctl(NormalizeSysctl(in)); got != want {
			t.Errorf("NormalizeSysctl is not idempotent on %q: %q", in, got)
		}
	}
	if !SafeSysctl("net/ipv4/tcp_syncookies") || !SafeSysctl("net.ipv4.tcp_syncookies") {
		t.Error("the slash form of a safe sysctl is not safe")
	}
	if ns, ok := NamespacedSysctl("net/ipv4/conf/eno2.100/rp_filter"); !ok || ns != "net" {
		t.Errorf("NamespacedSysctl(slash form) = %q, %v", ns, ok)
	}
	// The same sysctl in both forms is a duplicate.
	_, err := Decode("t.yaml", []byte(podBase(`      securityContext:
        sysctls:
        - {name: net/ipv4/conf/eno2.100/rp_filter, value: "1"}
        - {name: net.ipv4.conf.eno2/100.rp_filter, value: "1"}
`)))
	if err == nil {
		t.Error("the same sysctl in its slash and dotted forms was accepted twice")
	}
}

// Kubernetes refuses allowPrivilegeEscalation: false with the capability
// added as the literal CAP_SYS_ADMIN only (ValidateSecurityContext
// compares the string as written); SYS_ADMIN or cap_sys_admin pass its
// validation, so they pass dockctl's too (the capability still needs
// --allow-capabilities).
func TestNoNewPrivsSysAdminAsKubernetes(t *testing.T) {
	sc := func(c string) string {
		return edit(t, "        image: nginx:1.25\n", "        image: nginx:1.25\n        securityContext:\n          allowPrivilegeEscalation: false\n          capabilities: {add: ["+c+"]}\n")
	}
	for _, c := range []string{"SYS_ADMIN", "cap_sys_admin", "CAP_SYS_admin"} {
		if _, err := Decode("t.yaml", []byte(sc(c))); err != nil {
			t.Errorf("%s refused, Kubernetes accepts it: %v", c, err)
		}
	}
	if _, err := Decode("t.yaml", []byte(sc("CAP_SYS_ADMIN"))); err == nil {
		t.Error("CAP_SYS_ADMIN with allowPrivilegeEscalation: false accepted, Kubernetes refuses it")
	}
}
